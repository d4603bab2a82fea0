"""The command line around the Hydra app: Hydra's own composition errors become one line.

Hydra reports a bad override (an unknown group option, a key not in the config) on
several lines and exits 1. Until composition has finished, stderr is held back; if
composition fails, the first lines of Hydra's report are printed as one line and the
exit code is 2, like every other configuration error.
"""

from __future__ import annotations

import io
import sys

__all__ = ["composition_done", "run"]

_held: dict[str, object] = {}


def composition_done() -> None:
    """Release stderr: composition succeeded (called from the Hydra callbacks)."""
    real = _held.pop("stderr", None)
    if real is not None:
        buffer = sys.stderr
        sys.stderr = real  # type: ignore[assignment]
        if isinstance(buffer, io.StringIO) and buffer.getvalue():
            real.write(buffer.getvalue())  # type: ignore[attr-defined]


def _one_line(report: str) -> str:
    lines = [
        line.strip()
        for line in report.splitlines()
        if line.strip() and not line.startswith("Set the environment variable HYDRA_FULL_ERROR")
    ]
    return "; ".join(lines[:2]) if lines else "Hydra could not compose the config"


def run() -> None:
    """``python -m xaytune``."""
    from omegaconf import OmegaConf

    from xaytune.app.main import main

    # hydra.run.dir: a resumed run continues in its own directory.
    if not OmegaConf.has_resolver("xaytune_run_dir"):
        OmegaConf.register_new_resolver(
            "xaytune_run_dir", lambda resume, default: resume if resume else default
        )
    _held["stderr"] = sys.stderr
    sys.stderr = io.StringIO()
    try:
        main()
    except SystemExit as stop:
        if "stderr" in _held and stop.code not in (0, None):
            report = sys.stderr.getvalue()  # type: ignore[attr-defined]
            composition_done_silently()
            print(f"error: bad-override: {_one_line(report)}", file=sys.stderr)
            sys.exit(2)
        raise
    finally:
        composition_done()


def composition_done_silently() -> None:
    real = _held.pop("stderr", None)
    if real is not None:
        sys.stderr = real  # type: ignore[assignment]
