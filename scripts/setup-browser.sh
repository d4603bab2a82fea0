#!/usr/bin/env bash
# Set up the browser the report and viewer tests drive: Debian's chromium, headless.
# Idempotent and quick when it is there already (nothing is contacted then).
# Needs root (or sudo) to install; tests skip without it, and fail under CI=true.
# Usage: bash scripts/setup-browser.sh
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    chromium --version
    exit 0
fi
if [[ "$(id -u)" -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "error: chromium is missing and installing it needs root (apt-get install chromium)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version
