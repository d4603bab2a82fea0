#!/usr/bin/env bash
# Set up the BFCL suites (bfcl-multi-turn-base, bfcl-simple-python) in the current
# Python environment:
#   - the [bfcl] extra of pyproject.toml (mpmath, which BFCL's MathAPI imports);
#   - bfcl-eval, the Berkeley Function Calling Leaderboard wheel (Apache-2.0): its data,
#     function documents, API classes and checkers. Installed with --no-deps: it
#     declares model clients, torch and more as dependencies, and xaytune needs none
#     of them (only the data and the standard-library API classes are used).
# Only the package registry is contacted. Idempotent: a second run installs nothing.
# Then the suites are built from the wheel (into ~/.cache/xaytune/suites, or
# $XAYTUNE_SUITE_CACHE) and verified.
# Usage: bash scripts/setup-bfcl.sh        (PYTHON=... to pick the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
BFCL="bfcl-eval==2026.3.23"

# The extra's pins live in one place: pyproject.toml.
mapfile -t extra < <("$PYTHON" -c '
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["bfcl"]))
')
"$PYTHON" -m pip install -q "${extra[@]}"
"$PYTHON" -m pip install -q --no-deps "$BFCL"

# Check: the classes import, the suites build from the wheel and verify.
"$PYTHON" -m xaytune.suites bfcl
