"""Where the BFCL data and code come from: the installed ``bfcl-eval`` wheel.

``bfcl-eval`` (Apache-2.0) is an optional extra: ``bash scripts/setup-bfcl.sh``
installs it with ``--no-deps`` (its declared dependencies are model clients the
data, the checkers' rules and the API classes do not need) plus ``mpmath`` (for its
``MathAPI``). Only the pinned version is read: another version's files may mean
something else, so it is refused (``bfcl-version``) until the builder is checked
against it. Missing, it is ``bfcl-missing`` with the command that installs it.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path
from typing import Any

from xaytune.core import limits
from xaytune.core.domain.suite_files import load_jsonl_objects
from xaytune.core.errors import SuiteError
from xaytune.core.limits import LimitError, hash_bounded

__all__ = [
    "BFCL_VERSION",
    "DISTRIBUTION",
    "NOTICE",
    "bfcl_data",
    "file_digest",
    "read_entries",
    "require_bfcl",
]

DISTRIBUTION = "bfcl-eval"
BFCL_VERSION = "2026.3.23"
SETUP = (
    'run bash scripts/setup-bfcl.sh (or: pip install -e ".[bfcl]" && '
    f"pip install --no-deps {DISTRIBUTION}=={BFCL_VERSION})"
)

NOTICE = f"""\
This suite is built from the Berkeley Function Calling Leaderboard (BFCL) data, API
classes and function documentation in the bfcl-eval {BFCL_VERSION} wheel
(https://github.com/ShishirPatil/gorilla/tree/main/berkeley-function-call-leaderboard),
by Huanzhi Mao, Shishir Patil and the Sky Computing Lab, UC Berkeley.

Licensed under the Apache License, Version 2.0 (the "License"); you may not use these
files except in compliance with the License. You may obtain a copy of the License at
http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed
to in writing, software distributed under the License is distributed on an "AS IS"
BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
License for the specific language governing permissions and limitations under the
License.

Changes: the tasks, tools and references are re-written in xaytune's suite format
(tasks.jsonl: questions, function documents as JSON schemas, environments;
references.jsonl: the ground truth), pinned by the sha256 of the source files named
in each task's metadata.
"""


def require_bfcl() -> Path:
    """The installed ``bfcl_eval`` package directory (the pinned version)."""
    try:
        version = metadata.version(DISTRIBUTION)
        import bfcl_eval
    except (metadata.PackageNotFoundError, ModuleNotFoundError):
        raise SuiteError(
            "bfcl-missing",
            f"the BFCL extra is not installed (distribution {DISTRIBUTION}): {SETUP}",
        ) from None
    if version != BFCL_VERSION:
        raise SuiteError(
            "bfcl-version",
            f"{DISTRIBUTION} {version} is installed; xaytune's BFCL suites read {BFCL_VERSION}: "
            f"{SETUP}",
        )
    return Path(bfcl_eval.__file__).resolve().parent


def bfcl_data(relative: str) -> Path:
    """A file under the wheel's ``data/`` directory."""
    return require_bfcl() / "data" / relative


def file_digest(path: Path) -> str:
    """``sha256:<hex>`` of a source file (bounded)."""
    try:
        state = hash_bounded(
            path, limits.MAX_SUITE_FILE_BYTES, hashlib.sha256, size_name="MAX_SUITE_FILE_BYTES"
        )
    except OSError as error:
        raise SuiteError(
            "bfcl-missing", f"{path}: cannot read ({error.strerror}): {SETUP}"
        ) from None
    except LimitError as error:
        raise SuiteError(error.reason, error.detail) from None
    return "sha256:" + state.hexdigest()


def read_entries(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of one of the wheel's JSON-lines files, in order."""
    try:
        return [row for _, row in load_jsonl_objects(path)]
    except OSError as error:
        raise SuiteError(
            "bfcl-missing", f"{path}: cannot read ({error.strerror}): {SETUP}"
        ) from None
