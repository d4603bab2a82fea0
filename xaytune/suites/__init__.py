"""Built-in pinned suites and the suite builder."""

from __future__ import annotations

from pathlib import Path

from xaytune.core.errors import SuiteError
from xaytune.core.ids import is_valid_id
from xaytune.suites._build import build_suite, build_suite_from_file, build_suite_from_jsonl
from xaytune.suites._mapping import FieldMapping
from xaytune.suites.bfcl import CATEGORIES

__all__ = [
    "BUILTIN_SUITES",
    "FieldMapping",
    "build_suite",
    "build_suite_from_file",
    "build_suite_from_jsonl",
    "builtin_suite_path",
]

# Shipped with the package; the BFCL suites (one per category) are built from the [bfcl]
# extra's wheel.
BUILTIN_SUITES = ("arith-tools", *CATEGORIES)


def builtin_suite_path(name: str) -> Path:
    """Directory of a built-in suite (e.g. ``"arith-tools"``, shipped with the package;
    ``"bfcl-multi-turn-base"``, built from the installed BFCL wheel on first use:
    ``bfcl-missing`` without it)."""
    if is_valid_id(name) and name.startswith("bfcl-"):
        from xaytune.suites.bfcl import bfcl_suite_path

        return bfcl_suite_path(name)  # unknown-suite, bfcl-unsupported, bfcl-missing there
    if not is_valid_id(name) or name not in BUILTIN_SUITES:
        raise SuiteError(
            "unknown-suite", f"no built-in suite {name!r}; built-in: {', '.join(BUILTIN_SUITES)}"
        )
    return Path(__file__).resolve().parent / "data" / name
