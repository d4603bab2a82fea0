"""Built-in pinned suites and the suite builder."""

from __future__ import annotations

from pathlib import Path

from xaytune.core._ids import is_valid_id
from xaytune.core.errors import SuiteError
from xaytune.suites._build import build_suite, build_suite_from_jsonl

__all__ = ["BUILTIN_SUITES", "build_suite", "build_suite_from_jsonl", "builtin_suite_path"]

BUILTIN_SUITES = ("arith-tools",)


def builtin_suite_path(name: str) -> Path:
    """Directory of a built-in suite shipped with the package (e.g. ``"arith-tools"``)."""
    if not is_valid_id(name) or name not in BUILTIN_SUITES:
        raise SuiteError(
            "unknown-suite", f"no built-in suite {name!r}; built-in: {', '.join(BUILTIN_SUITES)}"
        )
    return Path(__file__).resolve().parent / "data" / name
