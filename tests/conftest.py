"""Session-wide test settings: the evidence cache is off unless a test turns it on,
and any cache a test uses lives in the session's temporary directory, never in the
user's cache home (XDG_CACHE_HOME)."""

from __future__ import annotations

import os
import tempfile


def pytest_configure(config) -> None:
    os.environ["XAYTUNE_CACHE_MODE"] = "off"
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="xaytune-test-cache-")
