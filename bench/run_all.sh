#!/usr/bin/env bash
# Run every benchmark script in bench/ (each prints a table and writes bench/results/<name>.json).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p results
shopt -s nullglob
for script in *_bench.py; do
    echo "== $script"
    python "$script" "$@"
done
