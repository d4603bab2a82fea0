"""``python -m xaytune``: the Hydra entry point (see xaytune.app.main)."""

from xaytune.app.cli import run

if __name__ == "__main__":
    run()
