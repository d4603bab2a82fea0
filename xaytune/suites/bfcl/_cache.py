"""Where a BFCL suite is built on first use, and under which name.

The cache directory is ``$XAYTUNE_SUITE_CACHE``, else ``$XDG_CACHE_HOME/xaytune/suites``,
else ``~/.cache/xaytune/suites``. A suite's directory name carries a digest of
everything its build reads (its source files, the builder's code, the environment's
code identity): the same wheel and code give the same directory and the same suite
digest on every machine; a change builds a new one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import SuiteError
from xaytune.plugins import resolve_environment
from xaytune.suites.bfcl._build import build_bfcl_suite, category, source_files
from xaytune.suites.bfcl._source import BFCL_VERSION, bfcl_data, file_digest, require_bfcl

__all__ = ["bfcl_suite_path"]

_BUILDER_MODULES = ("_build.py", "_cache.py", "_categories.py", "_schema.py", "_source.py")


def _cache_root() -> Path:
    explicit = os.environ.get("XAYTUNE_SUITE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "xaytune" / "suites"


def _build_key(name: str) -> str:
    """A digest of everything building ``name`` reads (module docstring)."""
    require_bfcl()
    built = category(name)
    here = Path(__file__).resolve().parent
    environment = "bfcl-multi-turn" if built.kind == "multi-turn" else "bfcl-functions"
    facts = {
        "suite": name,
        "bfcl": BFCL_VERSION,
        "data": {f"data/{file}": file_digest(bfcl_data(file)) for file in source_files(built)},
        "builder": {module: file_digest(here / module) for module in _BUILDER_MODULES},
        "environment": resolve_environment(environment, where=name).identity.model_dump(
            mode="json"
        ),
    }
    return hashlib.sha256(canonical_bytes(facts)).hexdigest()[:16]


def bfcl_suite_path(name: str) -> Path:
    """The directory of the BFCL suite ``name``, built into the cache on first use."""
    category(name)
    directory = _cache_root() / f"{name}-{BFCL_VERSION}-{_build_key(name)}"
    if not directory.exists():
        try:
            build_bfcl_suite(name, directory)
        except SuiteError as error:
            # Another process built it first (the directory appears whole, by rename).
            if error.reason != "exists":
                raise
    return directory
