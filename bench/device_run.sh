#!/bin/bash
# Benchmarks on the GPU machine (../shared/device/README.md): unpack the Vulkan loader and the wheels carried
# in .gl/ and .whl/, join the model from the parts earlier calls left in /root/m, unpack llama.cpp from
# .ll/llama.xz (../shared/device/llamacpp), then run `python -m bench` on it.
#
#   bench/device_run.sh part partNN            # before anything else: one part of the model (split -n 3 -d FILE
#                                              # .model/part), carried as .model/partNN, kept in /root/m
#   bench/device_run.sh WORKLOAD [FLAGS...]    # python -m bench WORKLOAD --model /root/m/model.gguf FLAGS...
#   bench/device_run.sh table                  # the README's table: decode (f32, q4res) at 1K beside Hugging Face
#                                              # and llama.cpp, prefill 512, decode at 8K
#   bench/device_run.sh tests TEST...          # pytest on this GPU (carry .var/pyt with pytest's wheels)
#
# TREE=DIR runs the runtime of another checkout (e.g. `git archive <commit> runtime bench | tar -x -C DIR`)
# in place of this one, so two commits' rows can be taken on one machine. Results land in $OUT (default
# /tmp/out): each workload's stamped rows as JSON, and its table on stdout.
# The tree that travels has no .git: start the command with BONSAI_COMMIT=<commit> so the rows name it.
set -u
if [ "${1:-}" = part ]; then
  # this call carries only the part: the next call's carry then fits 64 MiB beside the model's other parts
  mkdir -p /root/m && cp ".model/$2" /root/m/ || exit 1
  [ -f .ll/llama.xz ] && cp .ll/llama.xz /root/m/
  ls -la /root/m; exit 0
fi
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
ROOT=${TREE:-$PWD}
export XDG_RUNTIME_DIR=$PWD/.site PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/.site:$ROOT/runtime:$ROOT/sync
OUT=${OUT:-/tmp/out}
mkdir -p /root/m "$OUT"

# the GGUF joined from the parts (a part carried with this call too), its sha256 on stderr; llama.cpp unpacked
model_and_peer() {
  for p in .model/part0?; do [ -f "$p" ] && cp "$p" /root/m/; done
  if ls /root/m/part0? >/dev/null 2>&1; then cat /root/m/part0? > /root/m/model.gguf; fi
  sha256sum /root/m/model.gguf >&2
  lx=.ll/llama.xz; [ -f $lx ] || lx=/root/m/llama.xz
  if [ -f $lx ]; then mkdir -p /root/ll && xz -dc $lx > /root/ll/llama && chmod +x /root/ll/llama; fi
}

# bench WORKLOAD NAME FLAGS...: python -m bench on the model, its rows in $OUT/NAME.json
bench() {
  workload=$1; name=$2; shift 2
  (cd "$ROOT" && timeout 500 python3 -m bench "$workload" --model /root/m/model.gguf --json "$OUT/$name.json" "$@")
}

case "${1:-}" in
table)
  model_and_peer
  ROWS="--new-tokens 256 --prefill-kernels tiled --batch 512 --prefill-repeats 3"
  bench decode f32_1k --kv f32 --context 1024 --peers hf,llama.cpp -- $ROWS
  bench decode q4res_1k --kv q4res --context 1024 -- $ROWS
  bench prefill prefill_q4res --kv q4res --context 512 --peers llama.cpp
  bench decode f32_8k --kv f32 --context 8000 --peers llama.cpp -- --new-tokens 128 --prefill-kernels tiled --batch 512
  ;;
tests)
  shift
  python3 -m pip install -q --no-index --no-deps --no-compile --target .site .var/pyt/*.whl || exit 1
  (cd "$ROOT" && timeout 500 python3 -m pytest -q -o addopts="" -p no:cacheprovider "$@" 2>&1 | tail -40)
  ;;
decode|prefill|tenant-load)
  model_and_peer
  workload=$1; shift
  bench "$workload" "$workload" "$@"
  ;;
"")
  echo "usage: bench/device_run.sh part partNN | WORKLOAD [FLAGS...] | table | tests TEST..." >&2; exit 2
  ;;
*)
  (cd "$ROOT" && timeout 500 python3 -m bench "$1" --json "$OUT/$1.json" "${@:2}")
  ;;
esac
