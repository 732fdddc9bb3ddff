#!/usr/bin/env bash
# Set up everything Bonsai needs on a fresh Debian-like machine, idempotently:
#   - lavapipe (a CPU Vulkan driver) so wgpu finds an adapter even without a GPU
#   - a virtual environment in .venv with the project installed (runtime + test extras)
# Usage: bash scripts/setup.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

need_vulkan() { ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 || ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; }
if need_vulkan; then
    echo "setup: installing lavapipe (mesa-vulkan-drivers libvulkan1)" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[runtime,test,lint]'
echo "setup: ready (.venv)" >&2
