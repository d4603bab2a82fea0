"""``python -m xaytune``: the Hydra entry point (see xaytune.app.main)."""

from xaytune.app.main import main

if __name__ == "__main__":
    main()
