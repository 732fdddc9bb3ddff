#!/usr/bin/env bash
# Fetch npm's `pyodide` package (the Pyodide core the extension ships) into a git-ignored cache.
# Usage: bash surfaces/extension/fetch_pyodide.sh      (idempotent; needs node + npm)
# Result: surfaces/extension/.cache/node_modules/pyodide/  (pyodide.mjs, pyodide.asm.wasm, ...)
set -euo pipefail
PYODIDE_VERSION=${PYODIDE_VERSION:-314.0.7}
cd "$(dirname "$0")"
CACHE=.cache
have=$(node -p "require('./$CACHE/node_modules/pyodide/package.json').version" 2>/dev/null || true)
if [ "$have" = "$PYODIDE_VERSION" ]; then
    echo "fetch_pyodide: pyodide $PYODIDE_VERSION already in $CACHE" >&2
    exit 0
fi
mkdir -p "$CACHE"
npm install --prefix "$CACHE" --no-save --no-audit --no-fund --ignore-scripts "pyodide@$PYODIDE_VERSION" >&2
echo "fetch_pyodide: pyodide $PYODIDE_VERSION in $CACHE/node_modules/pyodide" >&2
