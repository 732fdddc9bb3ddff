#!/bin/bash
# Speed runs on the GPU machine (../shared/device/README.md), before and after side by side.
# Sent with carry [.gl, .whl, .before, .model/partNN]; `.before` is `git archive BASE runtime/bonsai`.
#   bench/device_run.sh kv      # call 1: sends .model/part00 (kept in /root/m), verify + kv_bench
#   bench/device_run.sh decode  # call 2, at once: sends part01, joins the GGUF, decode_bench (+ HF)
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
export XDG_RUNTIME_DIR=$PWD/.site PYTHONUNBUFFERED=1
AFTER=$PWD/.site:$PWD/runtime
BEFORE=$PWD/.site:$PWD/.before/runtime
OUT=${OUT:-/tmp/out}
mkdir -p /root/m "$OUT"
case "$1" in
kv)
  cp .model/part00 /root/m/part00
  PYTHONPATH=$AFTER timeout 100 python3 -c 'import sys; from bonsai.cli import main; main()' \
      verify attention --kv-len 48 --prefill 17 --variant split 2>&1 | tail -n 9 | tee "$OUT/verify.txt"
  KV="--context 32768 --window 4096 --heads 9 --kv-heads 3 --head-dim 64 --modes f32,q4 --repeats 10"
  PYTHONPATH=$AFTER timeout 200 python3 bench/kv_bench.py $KV --variants split,wide --upload-mb 512 \
      --chunk-kb 4096 16384 65536 --threads 4 8 --label after --out "$OUT/kv_after.json" 2>&1 | tee "$OUT/kv_after.txt"
  PYTHONPATH=$AFTER timeout 60 python3 bench/kv_bench.py --context 4096 --window 4096 --modes f32 --repeats 20 \
      --variants split,wide,serial --upload-mb 4 --chunk-kb 4096 --threads 4 --label "after 4K" \
      --out "$OUT/kv_4k.json" 2>&1 | grep -v "^write\|^mapped" | tee "$OUT/kv_4k.txt"
  PYTHONPATH=$BEFORE timeout 150 python3 bench/kv_bench.py $KV --upload-mb 256 --chunk-kb 4096 \
      --label before --out "$OUT/kv_before.json" 2>&1 | tee "$OUT/kv_before.txt"
  ;;
decode)
  cat /root/m/part00 .model/part01 > /root/m/SmolLM2-135M-Instruct.Q4_1.gguf
  sha256sum /root/m/SmolLM2-135M-Instruct.Q4_1.gguf
  M=/root/m/SmolLM2-135M-Instruct.Q4_1.gguf
  (while true; do nvidia-smi --query-gpu=clocks.sm,utilization.gpu,power.draw --format=csv,noheader >> "$OUT/clocks.txt"; sleep 2; done) >/dev/null 2>&1 &
  SAMPLER=$!
  D="--model $M --prompt-tokens 1024 --new-tokens 128 --prefill-tokens 512 --no-reference"
  run() { name=$1; shift; PYTHONPATH=$AFTER timeout 150 python3 bench/decode_bench.py $D "$@" \
      --out "$OUT/decode_$name.json" 2>&1 | grep -v Warning | tee "$OUT/decode_$name.txt"; }
  run split --variant split --submit-every 0 --hf --label after
  run wide --variant wide --submit-every 0 --label after
  run split_w2048 --variant split --window 2048 --submit-every 0 --label after
  run split_w2048_s10 --variant split --window 2048 --submit-every 10 --label after
  PYTHONPATH=$BEFORE timeout 150 python3 bench/decode_bench.py $D --label before \
      --out "$OUT/decode_before.json" 2>&1 | tee "$OUT/decode_before.txt"
  kill $SAMPLER  # (left running, it held the output pipe open until the call's time limit)
  ;;
esac
