#!/bin/bash
# Speed runs on the GPU machine (../shared/device/README.md): the attention variants side by side
# in one run (wide and split are the previous versions' kernels, blocks the new one), and the peer.
# Sent with carry [.gl, .whl, .model/partNN]:
#   bench/device_run.sh kv      # call 1: sends .model/part00 (kept in /root/m), verify + kv_bench
#                               # (before = .before/runtime, after = this tree, interleaved)
#   bench/device_run.sh decode  # call 2, at once: sends part01, joins the GGUF, decode_bench (+ HF);
#                               # "decode full" adds no-replay, wide and the profile
#   bench/device_run.sh part partNN # three calls, one part of the model each (split -n 3), then at once:
#   bench/device_run.sh compare [KV] # decode before/after at 1K and 8K, kernel probes (KV mode, default f32), llama.cpp d1024/8192
#   bench/device_run.sh final       # decode and the prefill kernels before/after, llama.cpp, Hugging Face
#   bench/device_run.sh ab KV N [C] # decode at context C (1K), before/after alternating N rounds
#   bench/device_run.sh kvab N      # decode at 1K, f32 and q4res alternating N rounds
#   bench/device_run.sh submit N    # decode at 1K by layers per submit (0, 5, 10, 15), N rounds
#   bench/device_run.sh profile     # cProfile of the resident decode loop, f32 and q4res (bench/resident_profile.py)
#   bench/device_run.sh roofline    # the matmul kernels beside the adapter's FMA peak (no model; carry .whl .gl only)
#   bench/device_run.sh roofvar [TILES] # the matmul in each tile, this tree and each .var/NAME/runtime (no model)
#   bench/device_run.sh floor [TILES] # an empty dispatch with and without a barrier, the matmul in each tile (no model)
#   bench/device_run.sh s10         # session 10: roofline, before/after at 1K (f32, q4res) and 8K, llama.cpp, HF
#   bench/device_run.sh s11 [KV]    # session 11: before/after alternating, prefill phases before/after, llama.cpp
#   bench/device_run.sh s11final    # session 11: f32 and q4res before/after alternating, Hugging Face, llama.cpp
#   bench/device_run.sh s12         # session 12: q4res fold probes before/after, f32 and q4res decode alternating, llama.cpp
#   bench/device_run.sh var [KV]    # the decode step's attention kernels (or GREP) of each patched tree in .var/NAME/runtime
#   bench/device_run.sh vardec [KV] # the same kernels and a decode row of each patched tree, two rounds interleaved
#   bench/device_run.sh final12     # session 12's head: f32 (with Hugging Face) and q4res at 1K, llama.cpp at depth 1024
#   bench/device_run.sh s13 [KV]    # session 13: main (.before) and the prompt fold's tile sizes (.var/NAME): prefill fold, prefill, decode
#   bench/device_run.sh final13     # session 13: main (.before) and this tree: prefill phases and fold, then s11final
#   bench/device_run.sh long        # issue 16's 1,100-token forced decoding against the numpy reference, on the GPU
#   bench/device_run.sh timeline    # the resident decode loop at 1K by the GPU's clock (f32, q4res), decode f32, llama.cpp tg at d1024
#   bench/device_run.sh fuse        # the attention merge in the fold's dispatch against apart: timeline, decode, llama.cpp
#   bench/device_run.sh s15         # the decode loop by the GPU's clock, decode by steps per readback, its profile, llama.cpp
#   bench/device_run.sh final15     # session 15: main against this tree (f32, q4res), llama.cpp, 32 steps, HF, 8K
#   bench/device_run.sh s17         # session 17: the q4res fold's V variants (.var/NAME): fold us, q4res rows, f32 rows
#   bench/device_run.sh gap17       # session 17: the decode step's kernels f32 and q4res (two rounds), decode f32/q4res x4
#   bench/device_run.sh final17hf   # session 17's head: f32 beside Hugging Face, q4res, f32 again, llama.cpp d1024
#   bench/device_run.sh final17     # session 17: main against this tree, f32 and q4res x3, folds, llama.cpp d1024/8192, 8K
#   bench/device_run.sh s18 [N]     # session 18: main (.before) against this tree at 1K, f32 and q4res alternating N rounds, q4res blocks
#   bench/device_run.sh final18 [N] # session 18: f32 / q4res in one process N rounds (kv_pair_bench), the final17hf table, 8K
#   bench/device_run.sh final19 [N] # session 19: main (.before) and this tree's f32 decode at 1K beside llama.cpp tg128 at depth 1024, N rounds; final18's table
#   bench/device_run.sh s20 [N]     # session 20: main, this tree's f32 with 0 / 1 blocks ahead (16, 8 steps), q4res, llama.cpp tg128 d1024
#   bench/device_run.sh final20 [N] # session 20's head: final19's rounds (and q4res), table and 8K
#   bench/device_run.sh k820 [N]    # session 20: a block ahead, 16 against 8 steps a block (f32, q4res)
#   bench/device_run.sh where21     # session 21: a decode step by kernel (encoding apart), by the GPU's clock, llama.cpp
#   bench/device_run.sh k21 [N]     # main against this tree by kernel, the head's norm apart or fused, decode rows
#   bench/device_run.sh blk21 [N]   # the blocks attention's positions per block (64, 128, 256) by kernel
#   bench/device_run.sh spy21       # the decode loop's host time by function (py-spy --native; carry .spy)
#   bench/device_run.sh sub21 [N]   # decode with a submit every 15, 10, 0 layers (the other order from `submit`)
#   bench/device_run.sh final22 [N] # session 22's head: main / this f32 (every 0, 15) / q4res at 1K, llama.cpp; HF table; 8K
#   bench/device_run.sh s24 [N]     # session 24: prompts read ahead or not, prefill main / this (N rounds), llama.cpp pp512
#   bench/device_run.sh split24     # session 24: prompts with and without split K; a prompt step by kernel, main / this
#   bench/device_run.sh final24 [N] # session 24's head: prompt step by kernel, prefill and decode main / this, HF, 8K
#   bench/device_run.sh ab24 SWITCH... # session 24: prefill_ab.py for each switch (read-ahead, split-k, submit-every-layer)
#   bench/device_run.sh win24 W...  # session 24: decode at 8K with each window size W; a decode step at 8K by kernel
#   bench/device_run.sh k24 [N]     # session 24: decode at 8K with the default window beside llama.cpp; decode_rounds N
#   bench/device_run.sh dec24 [N]   # session 24: decode at 1K, main / this tree (f32, q4res), llama.cpp, N rounds
#   bench/device_run.sh s25 [N]     # session 25: the prompt step by kernel main / this (f32, q4res), lane-fold off / on, prefill23 N, llama.cpp pp512
#   bench/device_run.sh lr25 [N]    # session 25: the rest's read submitted first or not: prefill_ab, timeline, prefill23
#   bench/device_run.sh tl25        # session 25: a 512-token prompt step's host events in time (prefill_timeline.py)
#   bench/device_run.sh final25 [N] # session 25's head: prefill main / this (N rounds), decode at 1K, HF table, 8K
#   bench/device_run.sh roof31 [TILES] # session 31: adapter features, the matmul shapes on each tile (no model; leaves .model/part00)
#   bench/device_run.sh peer34 [N [ours-first]] # session 34: llama.cpp pp512 with coopmat / integer dot toggled, its per-op times, this tree's prefill
#   bench/device_run.sh ab33 [N]    # session 33: prefill 512 of this tree and .var/main (q4res, f32), N rounds, llama.cpp pp512 d0
#   bench/device_run.sh k32 KV...   # session 32: a prompt step by every kernel, this tree and .var/main
#   bench/device_run.sh blk32 KV... # session 32: a prompt step's attention with 16, 32, 64 positions a block
#   bench/device_run.sh s32v [N]    # session 32: q4res prompt step by kernel main / this, prefill 512 main / this N rounds, llama.cpp
#   bench/device_run.sh pgt31       # session 31: a prompt step's passes and kernels by the GPU's clock in the flow (q4res, f32)
#   bench/device_run.sh ab31 [L...]  # session 31: prefill_ab submit-every L layers (q4res, f32), llama.cpp pp512 d0
#   bench/device_run.sh s31v [N]    # session 31: prefill 512 of this tree and each .var/NAME (q4res, f32), N rounds, llama.cpp pp512 d0
#   bench/device_run.sh s31 [KERNELS] # session 31: prefill 512 with each tile choice (q4res, f32), llama.cpp pp512 d0
#   bench/device_run.sh s30 [TREE]  # session 30: TREE's long forced decoding (carry .var), prompt step timeline (f32, q4res)
#   bench/device_run.sh s30b        # session 30: as s30's timeline, prefill_ab decode-batches, llama.cpp pp512
#   bench/device_run.sh gputests TREE TEST... # pytest on the GPU for TREE's tests (carry .var with .var/pyt's wheels)
#   bench/device_run.sh s29         # session 29: prefill_ab drop-rows and (.var/decwin) decode-batches, q4res; prefill; llama.cpp pp512
#   bench/device_run.sh s28 [R]     # session 28: q4res batches decoded or not (prefill_ab), prompt step by kernel, rows27, llama.cpp pp512 d0
#   bench/device_run.sh s28b        # session 28: s28 without the decode rows and llama.cpp at depth 1024
#   bench/device_run.sh s27c        # session 27: s27b's prefill (main / this), llama.cpp and decode rows only
#   bench/device_run.sh s27b        # session 27: main / this / .var/v4v by kernel (decode 1K, prompt 512), prefill, llama.cpp, decode
#   bench/device_run.sh s27 N [KV...] # session 27: decode (1K) and prompt (512) steps' folds by tree: main, this, each .var/NAME
#   bench/device_run.sh final26 [N] # session 26: the prompt step by kind main / this, then final25 (prefill23 N)
#   bench/device_run.sh var25 KV... # session 25: the prompt step by kernel of main, this tree and each .var/NAME/runtime
#   bench/device_run.sh s26 [N]     # session 26: fma26, a q4res prompt step by kernel main / this, prefill23 N, llama.cpp pp512
#   bench/device_run.sh mm26 [N]    # session 26: the tiled matmul main / this (roofline shapes), prompt step by kind, prefill23 N, llama.cpp pp512
#   bench/device_run.sh fma26       # session 26: the FMA rate by WGSL form (fma_probe.py), the matmul shapes beside it (no model)
#   bench/device_run.sh final23 [N] # session 23's head: prefill main / this, N rounds decode at 1K beside llama.cpp, HF table, 8K
#   bench/device_run.sh s23 [N]     # session 23: prefill 512 main / this tree (f32, q4res) N rounds, phases, prompt fold, llama.cpp pp512
#   bench/device_run.sh tiles23 [N] # session 23: the prompt fold of this tree and each .var/NAME/runtime (kernel_probe, 512-token prefill)
#   bench/device_run.sh phases23 [N] # session 23: the prompt step's phases, main / this tree alternating (f32, q4res), N rounds
#   bench/device_run.sh where23     # session 23: a prefill step by kernel and by phase (f32, q4res), llama.cpp pp512
#   bench/device_run.sh s22 [N]     # session 22: main's f32, this tree's f32 (native replay or not), q4res at 1K beside llama.cpp tg128 d1024
#   bench/device_run.sh pair20 [N]  # session 20: kv_pair_bench (f32 / q4res alternating) this tree, then main; llama.cpp
#   bench/device_run.sh prefill20   # session 20: prefill 512 by tile (f32, q4res), phases, main's q4res, llama.cpp pp512
#   bench/device_run.sh probe20     # session 20: kernel_probe at 1K, q4res main / this tree, f32 this tree
#   bench/device_run.sh s20q [N]    # session 20: q4res with 0 / 1 blocks ahead beside main's, f32; resident_profile
#   bench/device_run.sh probe       # where a decode step's GPU time goes at 1K (f32, q4res), decode f32, llama.cpp tg at d1024
set -u
if [ "${1:-}" = part ]; then
  # bench/device_run.sh part partNN: before any setup, so this call carries only the part (and .ll, .var, which stay
  # in /root/m for the next calls: the mode call's carry then fits 64 MiB beside the model's other half)
  mkdir -p /root/m && cp ".model/$2" /root/m/ || exit 1
  [ -f .ll/llama.xz ] && cp .ll/llama.xz /root/m/
  [ -d .var ] && rm -rf /root/m/var && cp -r .var /root/m/var
  ls -la /root/m; exit 0
fi
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .whl/*.whl || exit 1
export XDG_RUNTIME_DIR=$PWD/.site PYTHONUNBUFFERED=1
AFTER=$PWD/.site:$PWD/runtime
OUT=${OUT:-/tmp/out}
mkdir -p /root/m "$OUT"
# The GGUF joined from the parts `part` left (its sha256 on stderr) and llama.cpp unpacked from .ll/llama.xz
# into /root/ll/llama; prints the GGUF's path.
model_and_peer() {
  for p in .model/part0?; do [ -f "$p" ] && cp "$p" /root/m/; done  # a part carried with this call too
  cat /root/m/part0? > /root/m/model.gguf; sha256sum /root/m/model.gguf >&2
  lx=.ll/llama.xz; [ -f $lx ] || lx=/root/m/llama.xz  # carried now, or by `part`
  mkdir -p /root/ll && xz -dc $lx > /root/ll/llama && chmod +x /root/ll/llama
  echo /root/m/model.gguf
}
# quick_decode PYTHONPATH NAME CONTEXT ARGS...: one decode_bench row (256 new tokens after CONTEXT, the
# matvec prefill timed once) for the alternating modes below; prints the bench's row. BENCH: the bench
# folder (main's rows run .before/bench: this tree's bench may need this tree's runtime)
quick_decode() {
  path=$1; name=$2; context=$3; shift 3
  PYTHONPATH=$path timeout 100 python3 ${BENCH:-bench}/decode_bench.py --model "$M" --no-reference --prompt-tokens "$context" \
      --new-tokens 256 --prefill-tokens 512 --prefill-kernels matvec --prefill-repeats 1 "$@" \
      --out "$OUT/$name.json" 2>&1 | grep "bonsai GPU"
}
# prompt_rows PYTHONPATH NAME LABEL ARGS...: decode_bench's 512-token prefill rows (best of 5 interleaved in one
# process, then the first request), its lines prefixed with LABEL; BENCH: the bench folder, as quick_decode
prompt_rows() {
  path=$1; name=$2; label=$3; shift 3
  PYTHONPATH=$path timeout 200 python3 ${BENCH:-bench}/decode_bench.py --model "$M" --no-reference --prompt-tokens 64 \
      --new-tokens 16 --batch 512 --prefill-repeats 5 "$@" --out "$OUT/$name.json" 2>&1 \
      | grep -E "^tiled|first request" | sed "s/^/$label: /"
}
# llama_tg LABEL: llama.cpp's tg128 at depth 1024 (-r 3), its row prefixed with LABEL (the rounds of final19, s20, ...)
llama_tg() {
  timeout 100 /root/ll/llama bench -m $M -p 0 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "tg128" | sed "s/^/$1: /"
}
# llama_pp0 [LABEL]: llama.cpp's pp512 from an empty cache (-r 3), the work our prefill rows time; its row prefixed
# with "LABEL: " where given (s29 on)
llama_pp0() {
  timeout 60 /root/ll/llama bench -m $M -p 512 -n 0 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep -E "pp512" | sed "s/^/${1:+$1: }/"
}
# row PYTHONPATH NAME ARGS...: one decode_bench row with the mode's $K1 (the final* and s17 modes), its line
row() {
  path=$1; name=$2; shift 2
  PYTHONPATH=$path timeout 100 python3 bench/decode_bench.py $K1 "$@" --out "$OUT/$name.json" 2>&1 \
      | grep -i "bonsai GPU\|HF trans" | cut -c1-200
}
# hf_table [PYTHONPATH]: this tree at 1K, f32 beside Hugging Face (prefill 512 best of 3, decode 256 after 1,024),
# q4res (and PYTHONPATH's q4res, e.g. main's, beside it), f32 again; llama.cpp at depth 1024 (final17hf, final18)
hf_table() {
  K1="--model $M --no-reference --new-tokens 256 --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --prefill-repeats 3"
  row $AFTER f32_hf --kv f32 --hf --label "f32"
  row $AFTER q4res --kv q4res --label "q4res"
  if [ -n "${1:-}" ]; then row "$1" q4res_before --kv q4res --label "main q4res"; fi
  row $AFTER f32 --kv f32 --label "f32 again"
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
}
# eight_k: this tree's decode at 8K context (f32, q4res) beside llama.cpp at depth 8192
eight_k() {
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 100 python3 bench/decode_bench.py --model $M --no-reference --prompt-tokens 8000 --new-tokens 128 \
        --prefill-kernels tiled --batch 512 --prefill-repeats 1 --kv $kv --label "after $kv 8K" --out "$OUT/after_${kv}_8k.json" \
        2>&1 | grep -i "bonsai GPU" | cut -c1-200
  done
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 128 -d 8192 -ngl 99 -r 2 -dev Vulkan0 2>&1 | grep "|"
}
# rounds22 ROUNDS NAME LABEL ARGS...: ROUNDS rounds at 1K (decode 256 after 1,024) of main's f32 (.before), this tree's
# f32 and q4res, this tree's f32 with ARGS (rows NAME, LABEL), then llama.cpp's tg128 at depth 1024 (s22, final22)
rounds22() {
  n=$1; name=$2; label=$3; shift 3
  B=$PWD/.site:$PWD/.before/runtime
  for round in $(seq "$n"); do
    BENCH=.before/bench quick_decode "$B" "f32_main_$round" 1024 --kv f32 --label "main f32 r$round"
    quick_decode "$AFTER" "f32_after_$round" 1024 --kv f32 --label "this f32 r$round"
    quick_decode "$AFTER" "q4res_after_$round" 1024 --kv q4res --label "this q4res r$round"
    quick_decode "$AFTER" "${name}_$round" 1024 --kv f32 "$@" --label "this f32 $label r$round"
    llama_tg "llama r$round"
  done
}
# decode_rounds ROUNDS: ROUNDS rounds at 1K (decode 256 after 1,024) of main's f32 (.before), this tree's f32 and q4res,
# then llama.cpp's tg128 at depth 1024 (final20, k21, final23)
decode_rounds() {
  for round in $(seq "$1"); do
    BENCH=.before/bench quick_decode "$B" "f32_main_$round" 1024 --kv f32 --label "main f32 r$round"
    quick_decode "$AFTER" "f32_this_$round" 1024 --kv f32 --label "this f32 r$round"
    quick_decode "$AFTER" "q4res_this_$round" 1024 --kv q4res --label "this q4res r$round"
    llama_tg "llama r$round"
  done
}
# prefill23 ROUNDS: prefill 512 of main (.before) and this tree, f32 and q4res (best of 5 interleaved in one process),
# ROUNDS rounds alternating (s23, final23)
prefill23() {
  for round in $(seq "$1"); do
    for kv in f32 q4res; do
      for tree in main this; do
        if [ $tree = main ]; then path=$B; bench=.before/bench; else path=$AFTER; bench=bench; fi
        BENCH=$bench prompt_rows $path "prefill_${tree}_${kv}_$round" "$tree $kv r$round" --prefill-kernels tiled --kv $kv
      done
    done
  done
}
# fma_rates: the FMA rate by WGSL form (fma_probe.py) and the matmul shapes beside it (roofline_probe.py) (fma26, s26)
fma_rates() {
  PYTHONPATH=$AFTER python3 bench/fma_probe.py --out "$OUT/fma_probe.json" 2>&1 | grep "|\|adapter"
  PYTHONPATH=$AFTER python3 bench/roofline_probe.py --out "$OUT/roofline.json" --tiles 64x64x4,64x64x8 2>&1 | grep "|\|adapter"
}
# prompt_kinds KINDS PATTERN: a 512-token prompt step by kernel (kernel_probe), main (.before) and this tree, for each
# KV mode in KINDS, the lines matching PATTERN (s25, s26, mm26, final26)
prompt_kinds() {
  for kv in $1; do
    for run in "$B main" "$AFTER this"; do
      read -r path tree <<< "$run"
      PYTHONPATH=$path timeout 150 python3 bench/kernel_probe.py --model $M --kv $kv --prefill 512 --reps 30 \
          --out "$OUT/probe_${kv}_$tree.json" 2>&1 | grep -E "$2" | cut -c1-150 | sed "s/^/$tree $kv: /"
    done
  done
}
# rows27 LLAMA_REPS: prefill23 1 (main / this), llama.cpp's pp512 / tg128 at depth 1024 (-r LLAMA_REPS), decode at 1K
# of this tree, f32 and q4res (s27b, s27c)
rows27() {
  prefill23 1
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r "$1" -dev Vulkan0 2>&1 | grep -E "pp512|tg128"
  quick_decode "$AFTER" f32_this 1024 --kv f32 --label "this f32"
  quick_decode "$AFTER" q4res_this 1024 --kv q4res --label "this q4res"
}
# step_kernels TAG KINDS TREE...: a decode step at 1K and a 512-token prompt step by kernel (kernel_probe: the fold,
# the tiled products, the whole step) for each KV mode in KINDS and each TREE (PYTHONPATH@NAME), lines prefixed
# with TAG (s27, s27b)
step_kernels() {
  label=$1; kinds=$2; shift 2
  for kv in $kinds; do
    for tree in "$@"; do
      path=${tree%@*}; name=${tree##*@}
      for step in "--context 1024 --reps 100" "--prefill 512 --reps 20"; do
        tag=$(echo $step | cut -d' ' -f1 | tr -d -)
        PYTHONPATH=$path timeout 60 python3 bench/kernel_probe.py --model $M --kv $kv $step \
            --out "$OUT/probe_${name}_${kv}_$tag${label:+_$label}.json" 2>&1 | grep -E "blocks.wgsl|matmul_tiled|whole step" \
            | cut -c1-110 | sed "s/^/${label:+$label }$name $kv $tag: /"
      done
    done
  done
}
# prompt_timelines: when a 512-token prompt step's host work happens (prefill_timeline.py), f32 and q4res (tl25, s30, s30b)
prompt_timelines() {
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 120 python3 bench/prefill_timeline.py --model $M --kv $kv --out "$OUT/timeline_$kv.json" \
        2>&1 | grep -E "^\||tok/s|ms from"
  done
}
# long_forced PYTHONPATH: issue 16's long forced decoding (1,100 tokens, batched steps then one-token steps) against
# the numpy reference on this GPU's kernels, the runtime on PYTHONPATH (long, s30)
long_forced() {
  PYTHONPATH=$1 timeout 400 python3 - "$M" <<'PY' 2>&1 | grep -vi warn
import sys
from bonsai.diagnostics import long_forced as lf
from bonsai.diagnostics.numpy_cache import NumpyKVCache
from bonsai.engine.native import load_engine
from bonsai.reference import ReferenceModel
engine = load_engine(sys.argv[1], max_positions=lf.TOKENS, cache_factory=NumpyKVCache, progress=False)
print(engine.gpu.description, "CPU kernels:", engine.gpu.is_cpu)
check = lf.LongForced(engine, ReferenceModel(sys.argv[1]), lf.long_text_ids(engine.tokenizer))
for kv, window in (("f32", 2048), ("q4res", 2048), ("f32", lf.split_window(lf.TOKENS))):
    r = check.check(kv, window)
    print("ok    " if r.ok else "FAILED", r.describe())
PY
}
# gpu_tests TREE TEST...: pytest on this GPU for TREE's tests (gputests, s30)
gpu_tests() {
  python3 -m pip install -q --no-index --no-deps --no-compile --target .site .var/pyt/*.whl || return 1
  T=$1; shift
  (cd "$T" && PYTHONPATH=$OLDPWD/.site:$PWD/runtime:$PWD timeout 300 python3 -m pytest -q -o addopts="" \
      -p no:cacheprovider "$@" 2>&1 | grep -vi warn | tail -40)
}
# tree_path TREE: PYTHONPATH of "this" tree or of a runtime tree given by its directory (s32v on)
tree_path() { if [ $1 = this ]; then echo $AFTER; else echo $PWD/.site:$1/runtime; fi; }
# tree_rows ROUND PREFIX TREE...: prefill 512 (best of 5) of each TREE (tree_path's), q4res then f32, rows
# PREFIX_TREE_KV_ROUND (s32v, ab33, peer34)
tree_rows() {
  local round=$1 prefix=$2 kv tree; shift 2
  for kv in q4res f32; do
    for tree in "$@"; do
      prompt_rows $(tree_path $tree) "${prefix}_${tree##*/}_${kv}_$round" "$round ${tree##*/} $kv" --prefill-kernels tiled --kv $kv
    done
  done
}
# rows32 ROUND: tree_rows of this tree and /root/m/var/main (s32v, ab33)
rows32() { tree_rows "$1" prefill32 this /root/m/var/main; }
B=$PWD/.site:$PWD/.before/runtime
case "$1" in
gputests)
  # bench/device_run.sh gputests TREE TEST... (carry .var: .var/pyt = `pip download pytest` wheels, TREE = a tree
  # with runtime/, tests/ and pyproject.toml, e.g. .var/decwin = `git archive decwin runtime/bonsai bench tests
  # pyproject.toml`): the named tests on this GPU (its kernels, not lavapipe's), no model needed
  shift; gpu_tests "$@"
  ;;
s30)
  # bench/device_run.sh s30 [TREE] (after `part part00`; carry .whl .gl .ll .model/part01 .var): TREE's (.var/decwin,
  # the branch before its merge) long forced decoding against the numpy reference, then prompt_timelines of this tree
  M=$(model_and_peer)
  long_forced "$PWD/.site:$PWD/${2:-.var/decwin}/runtime"
  prompt_timelines
  ;;
s30b)
  # bench/device_run.sh s30b (as s30, right after it): prompt_timelines, prefill_ab decode-batches (q4res), llama.cpp
  # pp512 at depth 0 twice
  M=$(model_and_peer)
  prompt_timelines
  PYTHONPATH=$AFTER timeout 150 python3 bench/prefill_ab.py --switch decode-batches --model $M --kv q4res \
      --out "$OUT/ab_decode_batches.json" 2>&1 | grep -E "^\||prompt tok/s"
  for i in 1 2; do llama_pp0; done
  ;;
s31)
  # bench/device_run.sh s31 [KERNELS] (carry .whl .gl .ll .model/part01 right after `part part00`): a 512-token prefill
  # (best of 5) with each tile choice of KERNELS in one process (q4res, f32; decode_bench --prefill-kernels, e.g.
  # tiled:WIDE/NARROW), llama.cpp pp512 at depth 0 twice before and once after
  M=$(model_and_peer)
  K=${2:-tiled,tiled:64x64x8/64x64x8,tiled:64x64x4/64x64x4}  # session 31 ran branch tn8's TN and BK tiles
  for i in 1 2; do llama_pp0 "llama run $i"; done
  for kv in q4res f32; do
    prompt_rows $AFTER prefill31_$kv $kv --prefill-kernels "$K" --kv $kv
  done
  llama_pp0 "llama run 3"
  ;;
s31v)
  # bench/device_run.sh s31v [N] (carry .whl .gl .ll .var .model/part01 right after `roofvar` with .model/part00): a
  # 512-token prefill (best of 5, q4res and f32) of this tree and each .var/NAME/runtime, N rounds interleaved, llama.cpp
  # pp512 at depth 0 twice before and once after
  M=$(model_and_peer)
  for i in 1 2; do llama_pp0 "llama run $i"; done
  for round in $(seq ${2:-2}); do
    for tree in main .var/*; do
      path=$AFTER; [ $tree != main ] && path=$PWD/.site:$PWD/$tree/runtime
      for kv in q4res f32; do
        prompt_rows $path "prefill31v_${tree##*/}_${kv}_$round" "$round ${tree##*/} $kv" --prefill-kernels tiled --kv $kv
      done
    done
  done
  llama_pp0 "llama run 3"
  ;;
ab31)
  # bench/device_run.sh ab31 [LAYERS...] (carry .whl .gl .ll .model/part01 right after `part part00`): prefill_ab's
  # submit-every (a prompt step's submit every L layers against BATCH_SUBMIT_EVERY) for each L, 512 tokens, q4res and
  # f32, then llama.cpp pp512 at depth 0
  M=$(model_and_peer)
  shift
  for L in ${@:-4 1}; do
    PYTHONPATH=$AFTER timeout 150 python3 bench/prefill_ab.py --switch submit-every --layers $L --model $M --kv q4res,f32 \
        --tokens 512 --out "$OUT/ab_submit_every_$L.json" 2>&1 | grep -E "^\||prompt tok/s"
  done
  llama_pp0
  ;;
s32v)
  # bench/device_run.sh s32v [N] (carry .whl .gl .model/part01 right after `part part00` with .ll .var; .var/main =
  # `git archive 6de6bc1 runtime/bonsai`, the head before session 32's kernels): a 512-token prefill (best of 5,
  # q4res and f32) of this tree and main, round 1; llama.cpp pp512 at depth 0; the q4res prompt step by kernel (this,
  # main); rounds 2..N; llama.cpp again; this tree's q4res prompt step by the GPU's clock in the flow
  # (prefill_gpu_timeline.py). Most wanted first: a call cut short still brings the rows.
  M=$(model_and_peer)
  llama_pp0 "warm-up"
  rows32 1
  llama_pp0 "llama"
  for tree in this /root/m/var/main; do
    PYTHONPATH=$(tree_path $tree) timeout 150 python3 bench/kernel_probe.py --model $M --kv q4res --prefill 512 --reps 20 \
        --out "$OUT/probe_${tree##*/}_q4res.json" 2>&1 | grep -E "dispatches per step|blocks|merge|whole step" | sed "s|^|${tree##*/}: |"
  done
  for round in $(seq 2 ${2:-2}); do rows32 $round; done
  llama_pp0 "after"
  PYTHONPATH=$AFTER timeout 120 python3 bench/prefill_gpu_timeline.py --model $M --kv q4res \
      --out "$OUT/prefill_gpu_timeline_q4res.json" 2>&1 | grep -v -i warn
  ;;
peer34)
  # bench/device_run.sh peer34 [N [ours-first]] (as s32v; ours-first: this tree's rows before llama.cpp's in each round): llama.cpp's pp512 at depth 0 with its Vulkan paths toggled (default;
  # no cooperative matrices 2 (NV); no cooperative matrices at all; and no integer dot products either), its per-op GPU
  # times (GGML_VK_PERF_LOGGER, one pp512), and this tree's prefill 512 (q4res, f32) in N rounds between them
  M=$(model_and_peer)
  llama_pp0 "warm-up"
  for round in $(seq ${2:-2}); do
    [ "${3:-}" = ours-first ] && tree_rows $round prefill34 this
    llama_pp0 "$round default"
    GGML_VK_DISABLE_COOPMAT2=1 llama_pp0 "$round no-coopmat2"
    GGML_VK_DISABLE_COOPMAT2=1 GGML_VK_DISABLE_COOPMAT=1 llama_pp0 "$round no-coopmat"
    GGML_VK_DISABLE_COOPMAT2=1 GGML_VK_DISABLE_COOPMAT=1 GGML_VK_DISABLE_INTEGER_DOT_PRODUCT=1 llama_pp0 "$round no-coopmat-no-intdot"
    [ "${3:-}" = ours-first ] || tree_rows $round prefill34 this
  done
  [ "${3:-}" = ours-first ] && exit 0  # the per-op logs: once is enough (the first call)
  for env in "" "GGML_VK_DISABLE_COOPMAT2=1 GGML_VK_DISABLE_COOPMAT=1 GGML_VK_DISABLE_INTEGER_DOT_PRODUCT=1"; do
    name=perf_$([ -n "$env" ] && echo scalar || echo default)
    env $env GGML_VK_PERF_LOGGER=1 timeout 60 /root/ll/llama bench -m $M -p 512 -n 0 -ngl 99 -r 1 -dev Vulkan0 \
        > "$OUT/$name.txt" 2>&1
    echo "== $name (the log's last lines)"; grep -v -i "warn" "$OUT/$name.txt" | tail -45
  done
  ;;
ab33)
  # bench/device_run.sh ab33 [N] (as s32v; .var/main = main's runtime): prefill 512 of this tree and main, q4res and
  # f32, N rounds (default 4), llama.cpp pp512 d0 before and after
  M=$(model_and_peer)
  llama_pp0 "warm-up"
  llama_pp0 "llama"
  for round in $(seq ${2:-4}); do rows32 $round; done
  llama_pp0 "after"
  ;;
k32)
  # bench/device_run.sh k32 [KV...] (as s32v): a 512-token prompt step by kernel (kernel_probe, every kernel), this tree
  # and /root/m/var/main, for each KV mode (default q4res f32)
  M=$(model_and_peer)
  kvs="${*:2}"
  for kv in ${kvs:-q4res f32}; do
    for tree in this /root/m/var/main; do
      PYTHONPATH=$(tree_path $tree) timeout 100 python3 bench/kernel_probe.py --model $M --kv $kv --prefill 512 \
          --reps 20 2>&1 | grep -v -i warn | cut -c1-130 | sed "s|^|${tree##*/} $kv: |"
    done
  done
  ;;
blk32)
  # bench/device_run.sh blk32 [KV...] (as s32v): a 512-token prompt step's attention kernels and the whole step
  # (kernel_probe) with 16, 32 and 64 positions a block, this tree, for each KV mode
  M=$(model_and_peer)
  for kv in ${@:2}; do
    for block in 64 32 16 64; do
      PYTHONPATH=$AFTER timeout 100 python3 bench/kernel_probe.py --model $M --kv $kv --prefill 512 --reps 20 \
          --block $block 2>&1 | grep -E "blocks.wgsl|merge|whole step|Error|error" | cut -c1-130 | sed "s|^|$kv block $block: |"
    done
  done
  ;;
pgt31)
  # bench/device_run.sh pgt31 (carry .whl .gl .ll .model/part01 right after `part part00`): a 512-token prefill's passes
  # and kernels by the GPU's clock in the real flow (prefill_gpu_timeline.py), q4res and f32
  M=$(model_and_peer)
  for kv in q4res f32; do
    PYTHONPATH=$AFTER timeout 150 python3 bench/prefill_gpu_timeline.py --model $M --kv $kv \
        --out "$OUT/prefill_gpu_timeline_$kv.json" 2>&1 | grep -v -i warn
  done
  ;;
roof31)
  # bench/device_run.sh roof31 [TILES] (carry .whl .gl; no model, may carry .model/part00 for s31): the adapter's
  # features and workgroup limits, then roofline_probe's matmul shapes on each tile, two rounds
  PYTHONPATH=$AFTER python3 -c "import wgpu; a = wgpu.gpu.request_adapter_sync(power_preference='high-performance'); \
print(a.info['device'], sorted(a.features)); print({k: v for k, v in a.limits.items() if 'orkgroup' in k})" 2>&1 | grep -v -i warn
  [ -f .model/part00 ] && cp .model/part00 /root/m/part00
  T=${2:-64x64x4,64x64x8}  # session 31 ran branch tn8's 64x64x8x8,64x64x4x8,64x64x8x8x16,128x64x8x8x16,...
  for round in 1 2; do
    PYTHONPATH=$AFTER python3 bench/roofline_probe.py --tiles "$T" --out "$OUT/roof31_$round.json" 2>&1 | grep "|" | sed "s/^/$round /"
  done
  ;;
final29)
  # bench/device_run.sh final29: llama.cpp pp512 at depth 0 twice (its first run in a machine's life read 12-13K
  # where the next read 44-47K: both printed), hf_table, llama.cpp pp512 at depth 0 again, eight_k
  M=$(model_and_peer)
  for i in 1 2; do llama_pp0 "run $i"; done
  hf_table
  llama_pp0 "run 3"
  eight_k
  ;;
s29)
  # bench/device_run.sh s29 (carry .var/decwin = `git archive decwin runtime/bonsai bench`): prefill_ab drop-rows (q4res),
  # decwin's prefill_ab decode-batches (q4res), prefill best of 5 (this tree, f32 / q4res), llama.cpp pp512 at depth 0
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 150 python3 bench/prefill_ab.py --switch drop-rows --model $M --kv q4res \
      --out "$OUT/ab_drop_rows.json" 2>&1 | grep -E "^\||prompt tok/s"
  D=.var/decwin
  [ -d $D ] && PYTHONPATH=$PWD/.site:$PWD/$D/runtime timeout 150 python3 $D/bench/prefill_ab.py --switch decode-batches \
      --model $M --kv q4res --out "$OUT/ab_decode_batches.json" 2>&1 | grep -E "^\||prompt tok/s"
  for kv in f32 q4res; do
    prompt_rows $AFTER prefill_this_$kv "this $kv" --prefill-kernels tiled --kv $kv
  done
  llama_pp0
  ;;
s28)
  # bench/device_run.sh s28 [LLAMA_REPS] (as s27; .before = session 26's head): prefill_ab decode-batches (q4res, 512 and
  # 2,048 tokens, off / on in one process), a 512-token prompt step by kernel (this tree, q4res, f32), rows27
  # (prefill main / this, llama.cpp pp512 / tg128 at depth 1024, decode), llama.cpp pp512 at depth 0
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 240 python3 bench/prefill_ab.py --switch decode-batches --model $M --kv q4res \
      --out "$OUT/ab_decode_batches.json" 2>&1 | grep -E "^\||prompt tok/s"
  for kv in q4res f32; do
    PYTHONPATH=$AFTER timeout 150 python3 bench/kernel_probe.py --model $M --kv $kv --prefill 512 --reps 30 \
        --out "$OUT/probe_$kv.json" 2>&1 | grep -E "blocks.wgsl|decode_window|merge_blocks|whole step" | cut -c1-150 | sed "s/^/$kv: /"
  done
  rows27 "${2:-3}"
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -ngl 99 -r "${2:-3}" -dev Vulkan0 2>&1 | grep -E "pp512"
  ;;
s28b)
  # bench/device_run.sh s28b (as s28, shorter): prefill_ab decode-batches (q4res), a q4res prompt step by kernel,
  # prefill23 1 (main / this), llama.cpp pp512 at depth 0 (-r 3)
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 200 python3 bench/prefill_ab.py --switch decode-batches --model $M --kv q4res \
      --out "$OUT/ab_decode_batches.json" 2>&1 | grep -E "^\||prompt tok/s"
  PYTHONPATH=$AFTER timeout 100 python3 bench/kernel_probe.py --model $M --kv q4res --prefill 512 --reps 30 \
      --out "$OUT/probe_q4res.json" 2>&1 | grep -E "blocks.wgsl|decode_window|merge_blocks|whole step" | cut -c1-150
  prefill23 1
  llama_pp0
  ;;
s27c)
  # bench/device_run.sh s27c (as s27b, short): prefill23 1 (main / this); llama.cpp pp512 / tg128 at depth 1024;
  # decode at 1K, this f32 / q4res
  M=$(model_and_peer)
  rows27 2
  ;;
s27b)
  # bench/device_run.sh s27b (as s27; .var/v4v = the v4v branch): s27c's rows (llama.cpp -r 3), then the v4v
  # prefill and decode rows; then a decode step at 1K and a 512-token prompt step by kernel of main, this tree and
  # .var/v4v
  M=$(model_and_peer)
  V=$PWD/.site:$PWD/.var/v4v/runtime
  rows27 3
  for kv in f32 q4res; do
    prompt_rows "$V" prefill_v4v_$kv "v4v $kv" --prefill-kernels tiled --kv $kv
  done
  quick_decode "$V" f32_v4v 1024 --kv f32 --label "v4v f32"
  quick_decode "$V" q4res_v4v 1024 --kv q4res --label "v4v q4res"
  step_kernels "" "q4res f32" "$B@main" "$AFTER@this" "$V@v4v"
  ;;
s27)
  # bench/device_run.sh s27 ROUNDS [KV...] (as s26; carry .var too; .before = main): step_kernels of main, this tree
  # and each .var/NAME/runtime for each KV mode (default q4res f32), ROUNDS rounds
  M=$(model_and_peer)
  kinds="${*:3}"; kinds=${kinds:-q4res f32}
  trees=("$B@main" "$AFTER@this")
  for v in .var/*/runtime; do [ -d "$v" ] && trees+=("$PWD/.site:$PWD/$v@$(basename "$(dirname "$v")")"); done
  for round in $(seq "$2"); do step_kernels "r$round" "$kinds" "${trees[@]}"; done
  ;;
mm26)
  # bench/device_run.sh mm26 [ROUNDS] (as s26; .before = main): the matmul shapes (roofline_probe) of main, this
  # tree and each .var/NAME/runtime, two rounds, a 512-token prompt step by kind (f32, q4res) main / this, prefill23 ROUNDS, llama.cpp pp512 d1024
  VARS=$(for v in .var/*/runtime; do [ -d "$v" ] && echo "$PWD/.site:$PWD/$v $(basename $(dirname $v))"; done)
  for round in 1 2; do
    while read -r path tree; do
      [ -n "$path" ] || continue
      PYTHONPATH=$path python3 bench/roofline_probe.py --out "$OUT/roofline_${tree}_$round.json" --tiles 64x64x4,64x64x8 \
          2>&1 | grep "tiled" | sed "s/^/$tree: /"
    done <<< "$B main
$AFTER this
$VARS"
  done
  M=$(model_and_peer)
  prompt_kinds "f32 q4res" "matmul_tiled|whole step"
  prefill23 "${2:-1}"
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "pp512"
  ;;
s26)
  # bench/device_run.sh s26 [ROUNDS] (carry .whl .gl .before .ll .model/part01 after `part part00`; .before = main): the
  # FMA rate by WGSL form and the matmul shapes (fma26); a 512-token q4res prompt step by kernel, main and this tree;
  # prefill23 ROUNDS (default 1); llama.cpp's pp512 at depth 1024
  fma_rates
  M=$(model_and_peer)
  prompt_kinds q4res "group|store|scatter|whole step"
  prefill23 "${2:-1}"
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "pp512"
  ;;
lr25)
  # bench/device_run.sh lr25 [ROUNDS] (as s25; .before = main): prompts with the rest's read submitted before or after
  # the commits ahead (prefill_ab.py --switch last-read-first); the step's host events in time (prefill_timeline.py);
  # prefill23 ROUNDS (default 1)
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 240 python3 bench/prefill_ab.py --switch last-read-first --model $M \
      --out "$OUT/last_read_first.json" 2>&1 | grep -E "^\||prompt tok/s"
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 120 python3 bench/prefill_timeline.py --model $M --kv $kv --out "$OUT/timeline_$kv.json" \
        2>&1 | grep -E "^\||tok/s|ms from" | tail -8
  done
  prefill23 "${2:-1}"
  ;;
tl25)
  # bench/device_run.sh tl25 (as s25): when a 512-token prompt step's host work happens (prefill_timeline.py), f32, q4res
  M=$(model_and_peer)
  prompt_timelines
  ;;
final26)
  # bench/device_run.sh final26 [ROUNDS] (as s26; .before = the session's start): a 512-token prompt step by kind, main /
  # this (f32, q4res), then final25's rows: prefill23 ROUNDS, decode_rounds 1, hf_table, eight_k
  M=$(model_and_peer)
  prompt_kinds "f32 q4res" "matmul_tiled|whole step"
  prefill23 "${2:-1}"
  decode_rounds 1
  hf_table
  eight_k
  ;;
final25)
  # bench/device_run.sh final25 [ROUNDS] (as s25): prefill23 ROUNDS (default 1); decode_rounds 1; hf_table; eight_k
  M=$(model_and_peer)
  prefill23 "${2:-1}"
  decode_rounds 1
  hf_table
  eight_k
  ;;
s25)
  # bench/device_run.sh s25 [ROUNDS] (as s24; .before = main): a 512-token prompt step by kernel (kernel_probe), main and
  # this tree, f32 and q4res; prompts with and without the four-token prompt fold (prefill_ab.py --switch lane-fold);
  # prefill23 ROUNDS (default 1); llama.cpp's pp512 at depth 0 and 1024; decode_rounds 1
  M=$(model_and_peer)
  prompt_kinds "f32 q4res" "blocks|merge|whole step"
  PYTHONPATH=$AFTER timeout 240 python3 bench/prefill_ab.py --switch lane-fold --model $M --out "$OUT/lane_fold.json" \
      2>&1 | grep -E "^\||prompt tok/s"
  prefill23 "${2:-1}"
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -d 0,1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "pp512"
  decode_rounds 1
  ;;
s24)
  # bench/device_run.sh s24 [ROUNDS] (as s23; .before = main): prompts with and without reading their first layers'
  # rows ahead (prefill_ab.py, f32 and q4res, 512 and 2,048 tokens, one process each); prefill23 ROUNDS (default 2);
  # llama.cpp's pp512 at depth 0 and 1024; decode_rounds 1
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 240 python3 bench/prefill_ab.py --switch read-ahead --model $M --out "$OUT/read_ahead.json" \
      2>&1 | grep -E "^\||prompt tok/s"
  prefill23 "${2:-2}"
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -d 0,1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "pp512"
  decode_rounds 1
  ;;
split24)
  # bench/device_run.sh split24 [GROUPS...] (as s24): prompts with and without split K (prefill_ab.py --switch split-k,
  # f32 and q4res, 512 and 2,048 tokens), split until each GROUPS (default: the runtime's); a 512-token f32 prompt
  # step by kernel (kernel_probe), main and this tree
  M=$(model_and_peer)
  for groups in ${@:2}; do
    PYTHONPATH=$AFTER timeout 240 python3 bench/prefill_ab.py --switch split-k --split-groups $groups --model $M \
        --out "$OUT/split_k_$groups.json" 2>&1 | grep -E "^\||prompt tok/s"
  done
  [ $# -gt 1 ] || PYTHONPATH=$AFTER timeout 240 python3 bench/prefill_ab.py --switch split-k --model $M \
      --out "$OUT/split_k.json" 2>&1 | grep -E "^\||prompt tok/s"
  for run in "$B main" "$AFTER this"; do
    read -r path tree <<< "$run"
    PYTHONPATH=$path timeout 150 python3 bench/kernel_probe.py --model $M --kv f32 --prefill 512 --reps 30 \
        --out "$OUT/probe_prefill_f32_$tree.json" 2>&1 | grep -E "matmul|split_sum|whole step" | cut -c1-150 | sed "s/^/$tree: /"
  done
  ;;
final24)
  # bench/device_run.sh final24 [ROUNDS] (as s24): a 512-token f32 prompt step by kernel (kernel_probe) of main, this
  # tree and this tree with K split up to eight ways; prefill23 1; decode_rounds ROUNDS (default 2); hf_table; eight_k
  M=$(model_and_peer)
  for run in "$B main 4" "$AFTER this 4" "$AFTER split8 8"; do
    read -r path tree split <<< "$run"
    PYTHONPATH=$path timeout 150 python3 -c "import sys, runpy; import bonsai.ops.tiled as t; t.MAX_SPLIT = $split
sys.argv = ['kernel_probe.py', '--model', '$M', '--kv', 'f32', '--prefill', '512', '--reps', '30', '--out', '$OUT/probe_$tree.json']
runpy.run_path('bench/kernel_probe.py', run_name='__main__')" 2>&1 | grep -E "matmul_tiled|split_sum|whole step" | cut -c1-150 \
        | sed "s/^/$tree: /"
  done
  prefill23 1
  decode_rounds "${2:-2}"
  hf_table
  eight_k
  ;;
ab24)
  # bench/device_run.sh ab24 SWITCH... (as s24): prefill_ab.py for each SWITCH (f32 and q4res, 512 and 2,048 tokens)
  M=$(model_and_peer)
  for switch in ${@:2}; do
    PYTHONPATH=$AFTER timeout 240 python3 bench/prefill_ab.py --switch $switch --model $M --out "$OUT/ab_$switch.json" \
        2>&1 | grep -E "^\||prompt tok/s"
  done
  ;;
win24)
  # bench/device_run.sh win24 [WINDOWS] (as s24): decode at 8K (128 after 8,000), f32 and q4res, with each window size
  # (default 2048 8192), alternating; then a decode step at 8K by kernel (kernel_probe, f32, window 2048)
  M=$(model_and_peer)
  for kv in f32 q4res; do
    for window in ${@:2}; do
      PYTHONPATH=$AFTER timeout 100 python3 bench/decode_bench.py --model $M --no-reference --prompt-tokens 8000 \
          --new-tokens 128 --prefill-kernels tiled --batch 512 --prefill-repeats 1 --kv $kv --window $window \
          --label "$kv window $window" --out "$OUT/win_${kv}_$window.json" 2>&1 | grep -i "bonsai GPU" | cut -c1-200
    done
  done
  PYTHONPATH=$AFTER timeout 150 python3 bench/kernel_probe.py --model $M --kv f32 --context 8192 --reps 50 \
      --out "$OUT/probe_8k.json" 2>&1 | grep -v -i warn | head -30 | cut -c1-140
  ;;
k24)
  # bench/device_run.sh k24 [ROUNDS] (as s24): eight_k (this tree's default window) and decode_rounds ROUNDS (default 1)
  M=$(model_and_peer)
  eight_k
  decode_rounds "${2:-1}"
  ;;
dec24)
  # bench/device_run.sh dec24 [ROUNDS] (as s24): decode_rounds ROUNDS (default 2): main's f32, this tree's f32 and q4res
  # at 1K beside llama.cpp's tg128 at depth 1024
  M=$(model_and_peer)
  decode_rounds "${2:-2}"
  ;;
s23)
  # bench/device_run.sh s23 [ROUNDS] (as s22; .before = main): the prompt fold by kernel, main and this tree; prefill23
  # ROUNDS (default 2); the prompt step's phases; llama.cpp pp512
  M=$(model_and_peer)
  for run in "$B main" "$AFTER this"; do
    read -r path tree <<< "$run"
    PYTHONPATH=$path timeout 150 python3 bench/kernel_probe.py --model $M --kv f32 --prefill 512 --reps 50 \
        --out "$OUT/probe_prefill_f32_$tree.json" 2>&1 | grep -E "blocks.wgsl|merge_blocks|whole step" | sed "s/^/$tree: /"
  done
  prefill23 "${2:-2}"
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 100 python3 bench/prefill_profile.py --model $M --kv $kv --top 0 \
        --out "$OUT/phases_$kv.json" 2>&1 | grep -E "^\| (record|gpu|sync|total)|prefill:" | tr "\n" " " | sed "s/^/$kv phases: /"; echo
  done
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -d 0,1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "pp512"
  ;;
final23)
  # bench/device_run.sh final23 [ROUNDS] (as s23): prefill23 1; ROUNDS (default 3) rounds at 1K of main's f32, this tree's
  # f32 and q4res and llama.cpp's tg128 at depth 1024; final17hf's table (Hugging Face, llama.cpp pp512); 8K
  M=$(model_and_peer)
  prefill23 1
  decode_rounds "${2:-3}"
  hf_table
  eight_k
  ;;
var25)
  # bench/device_run.sh var25 [KV...] (as s25; carry .var too): a 512-token prompt step by kernel (kernel_probe) of main,
  # this tree and each patched tree .var/NAME/runtime, for each KV mode (default q4res)
  M=$(model_and_peer)
  for kv in ${@:2}; do
    for path in "$B" "$AFTER" .var/*/runtime; do
      name=$(basename "$(dirname "$path")"); [ "$path" = "$AFTER" ] && name=this; [ "$path" = "$B" ] && name=main
      PYTHONPATH=$PWD/.site:$path timeout 100 python3 bench/kernel_probe.py --model $M --kv $kv --prefill 512 --reps 30 \
          --out "$OUT/probe_${name}_$kv.json" 2>&1 | grep -E "blocks.wgsl|whole step" | cut -c1-120 | sed "s/^/$name $kv: /"
    done
  done
  ;;
tiles23)
  # bench/device_run.sh tiles23 (as s23; carry .var too): the prompt fold by kernel (kernel_probe, 512-token f32 prefill)
  # of this tree and each patched tree .var/NAME/runtime, ROUNDS (default 1) rounds alternating
  M=$(model_and_peer)
  for round in $(seq "${2:-1}"); do
    for path in "$AFTER" .var/*/runtime; do
      name=$(basename "$(dirname "$path")"); [ "$path" = "$AFTER" ] && name=this
      PYTHONPATH=$PWD/.site:$path timeout 100 python3 bench/kernel_probe.py --model $M --kv f32 --prefill 512 --reps 30 \
          --out "$OUT/probe_${name}_$round.json" 2>&1 | grep -E "blocks.wgsl|whole step" | cut -c1-120 | sed "s/^/$name r$round: /"
    done
  done
  ;;
phases23)
  # bench/device_run.sh phases23 [ROUNDS] (as s23): the 512-token prompt step's phases (prefill_profile), main and this
  # tree alternating, f32 and q4res, ROUNDS (default 2) rounds
  M=$(model_and_peer)
  for round in $(seq "${2:-2}"); do
    for kv in f32 q4res; do
      for run in "$B .before/bench main" "$AFTER bench this"; do
        read -r path bench tree <<< "$run"
        PYTHONPATH=$path timeout 100 python3 $bench/prefill_profile.py --model $M --kv $kv --top 0 \
            --out "$OUT/phases_${tree}_${kv}_$round.json" 2>&1 | grep -E "^\| (record|gpu|sync|total)|prefill:" \
            | tr "\n" " " | sed "s/^/$tree $kv r$round: /"; echo
      done
    done
  done
  ;;
where23)
  # bench/device_run.sh where23 (as s22): where a 512-token prefill step's time goes (kernel_probe by kernel, f32;
  # prefill_profile's phases and cProfile, f32 and q4res) beside llama.cpp's pp512 at depth 0 and 1024
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 150 python3 bench/kernel_probe.py --model $M --kv f32 --prefill 512 --reps 50 \
      --out "$OUT/probe_prefill_f32.json" 2>&1 | grep -v -i warn | head -40
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 100 python3 bench/prefill_profile.py --model $M --kv $kv --top 30 \
        --out "$OUT/phases_$kv.json" 2>&1 | grep -v -i warn | head -70 | cut -c1-180
  done
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -d 0,1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "pp512"
  ;;
s22)
  # bench/device_run.sh s22 [ROUNDS] (after `part part00`, carrying the model's last part .model/part01 too; carry .whl .gl .ll
  # .before; .before = main; the GGUF split in two: head -c 55000000, tail -c +55000001): ROUNDS (default 3) rounds22
  # with this tree's f32 replaying taped runs call by call (--no-native-replay); the host's replay cost
  M=$(model_and_peer)
  rounds22 "${2:-3}" f32_calls "no native replay" --no-native-replay
  PYTHONPATH=$AFTER timeout 100 python3 bench/replay_cost.py --model $M --context 1024 --out "$OUT/replay_cost.json" 2>&1 | tail -5
  ;;
final22)
  # bench/device_run.sh final22 [ROUNDS] (as s22): ROUNDS (default 6) rounds22 with this tree's f32 submitting every 15
  # layers; then final17hf's table (prefill 512 beside Hugging Face and llama.cpp) and 8K beside llama.cpp
  M=$(model_and_peer)
  rounds22 "${2:-6}" f32_every15 "every 15" --submit-every 15
  hf_table
  eight_k
  ;;
sub21)
  # bench/device_run.sh sub21 [ROUNDS] (after the part calls; carry .whl .gl): decode at 1K with a submit every 15, 10 and
  # 0 (none inside a step) layers, in that order (`submit` runs them the other way round), ROUNDS (default 2)
  M=$(model_and_peer)
  for r in $(seq 1 "${2:-2}"); do
    for every in 15 10 0; do
      quick_decode "$AFTER" "sub21_${every}_$r" 1024 --submit-every $every --label "every $every r$r"
    done
  done
  ;;
spy21)
  # bench/device_run.sh spy21 (after the part calls; carry .whl .gl .spy: .spy/py-spy from PyPI's py-spy wheel and a
  # summariser of its collapsed stacks): where the host's time goes in decode_bench's GPU-resident loop (f32 at 1K,
  # 512 new tokens), sampled with native frames
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 200 .spy/py-spy record -r 400 --native -f raw -o "$OUT/spy.txt" -- python3 \
      bench/decode_bench.py --model "$M" --no-reference --prompt-tokens 1024 --new-tokens 512 --prefill-tokens 512 \
      --prefill-kernels matvec --prefill-repeats 1 --kv f32 --out "$OUT/spy_decode.json" 2>&1 | grep -i "bonsai GPU\|error\|py-spy" | cut -c1-160
  python3 .spy/summarize.py "$OUT/spy.txt" 40 60 "resident.py"  # the stacks inside the resident loop
  ;;
blk21)
  # bench/device_run.sh blk21 [ROUNDS] (after the part calls; carry .whl .gl): kernel_probe.py's decode step at 1K
  # (f32 and q4res) with 64, 128 and 256 positions a block of the blocks attention, alternating, ROUNDS (default 2)
  M=$(model_and_peer)
  for round in $(seq "${2:-2}"); do
    for kv in f32 q4res; do
      for block in 64 128 256; do
        PYTHONPATH=$AFTER timeout 100 python3 bench/kernel_probe.py --model $M --context 1024 --reps 200 --kv $kv \
            --block $block --out "$OUT/kp_${kv}_b${block}_$round.json" 2>&1 | grep -v -i warn \
            | grep "blocks\|whole" | sed "s/^/$kv block $block r$round: /"
      done
    done
  done
  ;;
k21)
  # bench/device_run.sh k21 [ROUNDS] (as s20; .before = main): kernel_probe.py's decode step at 1K (f32), main and
  # this tree alternating, ROUNDS (default 2); bench/head_probe.py; then ROUNDS rounds of decode at 1K (main's f32,
  # this tree's f32 and q4res) beside llama.cpp's tg128 at depth 1024
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  for round in $(seq "${2:-2}"); do
    for side in main this; do
      R=$AFTER; [ $side = main ] && R=$B
      PYTHONPATH=$R timeout 100 python3 bench/kernel_probe.py --model $M --context 1024 --reps 200 \
          --out "$OUT/kp_${side}_$round.json" 2>&1 | grep -v -i warn | grep "wgsl\|whole" | sed "s/^/$side r$round: /"
    done
  done
  (cd bench && PYTHONPATH=$AFTER timeout 100 python3 head_probe.py --out "$OUT/head_probe.json" 2>&1 | grep -v -i warn)
  decode_rounds "${2:-2}"
  ;;
where21)
  # bench/device_run.sh where21 (after the part calls; carry .whl .gl .ll): a decode step at 1K (f32) by kernel with the
  # pass's encoding timed apart (bench/kernel_probe.py), by the GPU's clock (bench/gpu_timeline.py), one decode row and
  # llama.cpp's tg128 at depth 1024
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 100 python3 bench/kernel_probe.py --model $M --context 1024 --reps 200 --out "$OUT/kp.json" \
      2>&1 | grep -v -i warn | head -n 12
  PYTHONPATH=$AFTER timeout 150 python3 bench/gpu_timeline.py --model $M --kv f32 --context 1024 --new-tokens 64 \
      --out "$OUT/timeline_f32.json" 2>&1 | grep -iv warn
  quick_decode "$AFTER" decode_f32 1024 --label "f32 1K"
  llama_tg "llama"
  ;;
fma26)
  # bench/device_run.sh fma26 (carry .whl .gl only: no model): is roofline_probe's FMA peak the card's or its form's?
  fma_rates
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
  ;;
roofline)
  PYTHONPATH=$AFTER python3 bench/roofline_probe.py --out "$OUT/roofline.json" "${@:2}"
  ;;
floor)
  # bench/device_run.sh floor [TILES] (carry .whl .gl only: no model): what an empty dispatch costs with and
  # without a barrier, then the matmul shapes in each tile of TILES beside the FMA peak
  PYTHONPATH=$AFTER python3 bench/dispatch_floor_probe.py --out "$OUT/dispatch_floor.json"
  PYTHONPATH=$AFTER python3 bench/roofline_probe.py --out "$OUT/roofline.json" \
      --tiles "${2:-64x64x4,64x64x8,32x32x4,64x32x4,32x64x4}" 2>&1 | grep "|"
  ;;
roofvar)
  # bench/device_run.sh roofvar [TILES] (carry .whl .gl .var; no model): the matmul shapes of this tree and of each
  # patched tree in .var/NAME/runtime, two rounds alternating
  for round in 1 2; do
    for tree in main .var/*; do
      path=$AFTER; [ $tree != main ] && path=$PWD/.site:$PWD/$tree/runtime
      PYTHONPATH=$path python3 bench/roofline_probe.py --out "$OUT/roofline_${tree##*/}_$round.json" \
          --tiles "${2:-64x64x4,64x64x8}" 2>&1 | grep -E "tiled|FMA" | sed "s|^|$round ${tree##*/}: |"
    done
  done
  ;;
s10)
  # bench/device_run.sh s10 (carry .whl .gl .before .ll; .before = `git archive <before> runtime/bonsai bench`)
  M=$(model_and_peer)
  PYTHONPATH=$AFTER python3 bench/roofline_probe.py --out "$OUT/roofline.json" 2>&1 | grep "|"
  K1="--model $M --no-reference --new-tokens 256"
  b() { name=$1; shift; PYTHONPATH=$PWD/.site:$PWD/.before/runtime timeout 100 python3 .before/bench/decode_bench.py $K1 \
      --prefill-tokens 512 --prefill-repeats 2 --prefill-kernels matvec "$@" --out "$OUT/$name.json" 2>&1 | grep -iv "warn"; }
  a() { name=$1; shift; PYTHONPATH=$AFTER timeout 150 python3 bench/decode_bench.py $K1 --prefill-repeats 2 "$@" \
      --out "$OUT/$name.json" 2>&1 | grep -iv "warn"; }
  b before --prompt-tokens 1024 --label "before f32 1K"
  a after --prompt-tokens 1024 --prefill-kernels tiled,matvec --batch 512 --label "after f32 1K, batch 512" --hf
  a after_b128 --prompt-tokens 1024 --prefill-kernels tiled --label "after f32 1K, batch 128"
  b before_q4res --prompt-tokens 1024 --kv q4res --label "before q4res 1K"
  a after_q4res --prompt-tokens 1024 --kv q4res --prefill-kernels tiled --batch 512 --label "after q4res 1K"
  timeout 150 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024,8192 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  a after_8k --prompt-tokens 8000 --new-tokens 128 --prefill-kernels tiled --prefill-repeats 1 --label "after f32 8K"
  b before_8k --prompt-tokens 8000 --new-tokens 128 --prefill-repeats 1 --label "before f32 8K"
  a after_block32 --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --block 32 --label "after f32 1K, block 32"
  PYTHONPATH=$AFTER timeout 100 python3 bench/kernel_probe.py --model $M --prefill 512 --reps 20 \
      --out "$OUT/probe_prefill.json" 2>&1 | grep -iv warn | head -30
  ;;
s11)
  # bench/device_run.sh s11 [KV] (carry .whl .gl .before .ll): before/after alternating (prefill 512 and decode at
  # 1K, KV mode default f32), the prefill step's phases and the kernel probes (prefill 512, decode at 1K) before/after,
  # llama.cpp at depth 1024
  KV=${2:-f32}
  M=$(model_and_peer)
  K1="--model $M --no-reference --new-tokens 256 --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --kv $KV"
  for round in 1 2; do
    for side in before after; do
      if [ $side = before ]; then P=$PWD/.site:$PWD/.before/runtime; B=.before/bench; else P=$AFTER; B=bench; fi
      PYTHONPATH=$P timeout 100 python3 $B/decode_bench.py $K1 --prefill-repeats 3 --label "$side $KV 1K" \
          --out "$OUT/${side}_$round.json" 2>&1 | grep -i "bonsai GPU" | cut -c1-200
    done
  done
  for side in before after; do
    P=$AFTER; [ $side = before ] && P=$PWD/.site:$PWD/.before/runtime
    PYTHONPATH=$P timeout 100 python3 bench/prefill_profile.py --model $M --kv $KV --top 12 --out "$OUT/phases_$side.json" \
        2>&1 | grep -iv warn | cut -c1-160 | head -30
  done
  for side in before after; do
    P=$AFTER; [ $side = before ] && P=$PWD/.site:$PWD/.before/runtime
    PYTHONPATH=$P timeout 100 python3 bench/kernel_probe.py --model $M --kv $KV --prefill 512 --reps 20 \
        --out "$OUT/probe_$side.json" 2>&1 | grep -iv warn | head -8
    PYTHONPATH=$P timeout 100 python3 bench/kernel_probe.py --model $M --kv $KV --context 1024 --reps 100 \
        --out "$OUT/probe_decode_$side.json" 2>&1 | grep -iv warn | head -8
  done
  timeout 150 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
final13)
  # bench/device_run.sh final13 (carry .whl .gl .before .ll; .before = `git archive <main> runtime/bonsai bench`): each
  # tree's 512-token prefill step by phase and its blocks fold, then all of s11final (falls through)
  M=$(model_and_peer)
  for tree in before after; do
    path=$AFTER; [ $tree = before ] && path=$PWD/.site:$PWD/.before/runtime
    PYTHONPATH=$path timeout 60 python3 bench/prefill_profile.py --model $M --top 0 --out "$OUT/prefill_profile_$tree.json" \
        2>&1 | grep -E "^\| (record|gpu|sync|total) |^prefill:" | sed "s/^/$tree: /"
    PYTHONPATH=$path timeout 60 python3 bench/kernel_probe.py --model $M --prefill 512 --reps 20 --out "$OUT/probe_$tree.json" \
        2>&1 | grep -iE "blocks.wgsl|whole step" | sed "s/^/$tree: /" | cut -c1-160
  done
  ;&
s11final)
  # bench/device_run.sh s11final (carry .whl .gl .before .ll; .before = the session's start): f32 and q4res
  # before/after alternating, two rounds, at 1K; Hugging Face and llama.cpp at depth 1024 in the same call
  M=$(model_and_peer)
  K1="--model $M --no-reference --new-tokens 256 --prompt-tokens 1024 --prefill-kernels tiled --batch 512"
  for round in 1 2; do
    for kv in f32 q4res; do
      for side in before after; do
        if [ $side = before ]; then P=$PWD/.site:$PWD/.before/runtime; B=.before/bench; else P=$AFTER; B=bench; fi
        PYTHONPATH=$P timeout 100 python3 $B/decode_bench.py $K1 --kv $kv --prefill-repeats 3 --label "$side $kv 1K" \
            --out "$OUT/${side}_${kv}_$round.json" 2>&1 | grep -i "bonsai GPU" | cut -c1-200
      done
    done
  done
  PYTHONPATH=$AFTER timeout 150 python3 bench/decode_bench.py $K1 --hf --prefill-repeats 2 --label "after f32 1K" \
      --out "$OUT/hf.json" 2>&1 | grep -i "bonsai GPU\|HF trans" | cut -c1-200
  timeout 150 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
s12)
  # bench/device_run.sh s12 (carry .whl .gl .before .ll; .before = the session's start): the decode step's kernels
  # (q4res) before/after, then f32 and q4res before/after alternating, two rounds, decode at 1K; llama.cpp tg at d1024
  M=$(model_and_peer)
  for side in before after; do
    P=$AFTER; [ $side = before ] && P=$PWD/.site:$PWD/.before/runtime
    PYTHONPATH=$P timeout 100 python3 bench/kernel_probe.py --model $M --kv q4res --context 1024 --reps 100 \
        --out "$OUT/probe_q4res_$side.json" 2>&1 | grep -iE "${GREP:-blocks.wgsl|whole step}" | sed "s/^/$side: /" | cut -c1-160
  done
  for round in 1 2; do
    for kv in f32 q4res; do
      quick_decode "$PWD/.site:$PWD/.before/runtime" "before_${kv}_$round" 1024 --kv $kv --label "before $kv r$round"
      quick_decode "$AFTER" "after_${kv}_$round" 1024 --kv $kv --label "after $kv r$round"
    done
  done
  timeout 100 /root/ll/llama bench -m $M -p 0 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
var|vardec)
  # bench/device_run.sh var [KV] (carry .whl .gl .var): patched copies of the runtime (.var/NAME/runtime), each one's
  # decode step at 1K by kernel (GREP), ROUNDS (default 2) rounds interleaved (KV default q4res); vardec [KV] (after the three part
  # calls; KV default f32) adds a decode_bench row of each tree after its kernels
  M=$(model_and_peer)
  KV=${2:-q4res}; [ "$1" = vardec ] && KV=${2:-f32}
  for round in $(seq "${ROUNDS:-2}"); do
    for d in .var/*/; do
      name=$(basename "$d")
      PYTHONPATH=$PWD/.site:$PWD/${d}runtime timeout 100 python3 bench/kernel_probe.py --model $M --kv "$KV" --context 1024 \
          --reps 100 --out "$OUT/var_${name}_$round.json" 2>&1 | grep -iE "${GREP:-blocks.wgsl|whole step}" | sed "s/^/$name r$round: /" | cut -c1-160
      [ "$1" = vardec ] && quick_decode "$PWD/.site:$PWD/${d}runtime" "dec_${name}_$round" 1024 --kv "$KV" --label "$name $KV r$round"
    done
  done
  ;;
final12)
  # bench/device_run.sh final12 (carry .whl .gl .ll): this tree's decode and prefill at 1K, f32 beside Hugging Face,
  # q4res, and llama.cpp (pp512 and tg128 at depth 1024), one call
  M=$(model_and_peer)
  K1="--model $M --no-reference --new-tokens 256 --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --prefill-repeats 3"
  PYTHONPATH=$AFTER timeout 200 python3 bench/decode_bench.py $K1 --hf --label "f32 1K" --out "$OUT/final_f32.json" 2>&1 \
      | grep -i "bonsai GPU\|HF trans" | cut -c1-200
  PYTHONPATH=$AFTER timeout 100 python3 bench/decode_bench.py $K1 --kv q4res --label "q4res 1K" --out "$OUT/final_q4res.json" \
      2>&1 | grep -i "bonsai GPU" | cut -c1-200
  timeout 150 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
s13)
  # bench/device_run.sh s13 [KV] (carry .whl .gl .ll .before .var; .before = `git archive <main> runtime/bonsai bench`,
  # .var/NAME/runtime = patched copies of this tree): per tree the 512-token prefill step by kernel (round 1; GREP
  # picks the rows, default the blocks fold), then prefill 512 (best of 3) and decode 256 after 1,024 (two rounds);
  # then each tree's prefill phases (record, gpu, sync); llama.cpp
  M=$(model_and_peer)
  for round in 1 2; do
    for d in .before/ .var/*/; do
      name=$(basename "$d")
      path=$PWD/.site:$PWD/${d}runtime
      [ $round = 1 ] && PYTHONPATH=$path timeout 60 python3 bench/kernel_probe.py --model $M --kv "${2:-f32}" --prefill 512 \
          --reps 20 --out "$OUT/probe_${name}.json" 2>&1 | grep -iE "${GREP:-blocks.wgsl|whole step}" | sed "s/^/$name: /" | cut -c1-160
      PYTHONPATH=$path timeout 100 python3 bench/decode_bench.py --model $M --no-reference --kv "${2:-f32}" --new-tokens 256 \
          --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --prefill-repeats 3 --label "$name r$round" \
          --out "$OUT/bench_${name}_$round.json" 2>&1 | grep "bonsai GPU" | cut -c1-200
    done
  done
  for d in .before/ .var/*/; do
    name=$(basename "$d")
    PYTHONPATH=$PWD/.site:$PWD/${d}runtime timeout 60 python3 bench/prefill_profile.py --model $M --kv "${2:-f32}" --top 0 \
        --out "$OUT/prefill_profile_$name.json" 2>&1 | grep -E "^\| (record|gpu|sync|total) |^prefill:" | sed "s/^/$name: /"
  done
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
probe)
  # bench/device_run.sh probe (carry .whl .gl .ll): per-kernel GPU time of a decode step at 1K, one decode row, the peer
  M=$(model_and_peer)
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 100 python3 bench/kernel_probe.py --model $M --kv $kv --context 1024 --reps 100 \
        --out "$OUT/probe_decode_$kv.json" 2>&1 | grep -iv warn | head -24
  done
  quick_decode "$AFTER" decode_f32 1024 --label "f32 1K"
  timeout 100 /root/ll/llama bench -m $M -p 0 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
timeline)
  # bench/device_run.sh timeline (after the three part calls; carry .whl .gl .ll): the resident decode loop at 1K by the
  # GPU's clock (bench/gpu_timeline.py, f32 and q4res), one decode row, llama.cpp tg at depth 1024
  M=$(model_and_peer)
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 150 python3 bench/gpu_timeline.py --model $M --kv $kv --context 1024 --new-tokens 64 \
        --out "$OUT/timeline_$kv.json" 2>&1 | grep -iv warn
  done
  quick_decode "$AFTER" decode_f32 1024 --label "f32 1K"
  timeout 100 /root/ll/llama bench -m $M -p 0 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
fuse)
  # bench/device_run.sh fuse (after the three part calls; carry .whl .gl .ll): the blocks attention's merge in the fold's
  # dispatch against apart (--no-fuse-merge): the GPU timeline at 1K (f32), decode at 1K alternating (f32, q4res, two
  # rounds), llama.cpp tg at depth 1024
  M=$(model_and_peer)
  for flag in "" --no-fuse-merge; do
    PYTHONPATH=$AFTER timeout 150 python3 bench/gpu_timeline.py --model $M --kv f32 --context 1024 --new-tokens 64 $flag \
        --out "$OUT/timeline_f32${flag:+_apart}.json" 2>&1 | grep -iv warn
  done
  for round in 1 2; do
    for kv in f32 q4res; do
      quick_decode "$AFTER" "fused_${kv}_$round" 1024 --kv $kv --label "fused $kv r$round"
      quick_decode "$AFTER" "apart_${kv}_$round" 1024 --kv $kv --no-fuse-merge --label "apart $kv r$round"
    done
  done
  timeout 100 /root/ll/llama bench -m $M -p 0 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  ;;
s15)
  # bench/device_run.sh s15 (after the three part calls; carry .whl .gl .ll .before; .before = `git archive <main> runtime/bonsai
  # bench`): the real model's decode loop at 1K by the GPU's clock (f32), decode at 1K main against this tree (f32, q4res,
  # two rounds alternating), llama.cpp tg at depth 1024, then this tree by steps per readback (32, 63)
  M=$(model_and_peer)
  PYTHONPATH=$AFTER timeout 150 python3 bench/gpu_timeline.py --model $M --kv f32 --context 1024 --new-tokens 64 \
      --stack-after 120 --out "$OUT/timeline_f32.json" 2>&1 | grep -iv "warn\|^gpu_timeline:"
  for round in 1 2; do
    for kv in f32 q4res; do
      quick_decode "$PWD/.site:$PWD/.before/runtime" "before_${kv}_$round" 1024 --kv $kv --label "before $kv r$round"
      quick_decode "$AFTER" "after_${kv}_$round" 1024 --kv $kv --label "after $kv r$round"
    done
    [ $round = 1 ] && timeout 100 /root/ll/llama bench -m $M -p 0 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
  done
  for k in 32 63; do
    quick_decode "$AFTER" "steps$k" 1024 --kv f32 --resident-steps $k --label "after f32 $k steps"
  done
  ;;
final15)
  # bench/device_run.sh final15 (after the three part calls; carry .whl .gl .ll .before; .before = `git archive <main>
  # runtime/bonsai bench`): main against this tree, f32 and q4res at 1K (prefill 512 best of 3, decode 256 after 1,024),
  # llama.cpp at depth 1024, this tree with 32 steps per readback and one submit per step, a second round, Hugging
  # Face, and 8K context beside llama.cpp at depth 8192
  M=$(model_and_peer)
  K1="--model $M --no-reference --new-tokens 256 --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --prefill-repeats 3"
  B=$PWD/.site:$PWD/.before/runtime
  for round in 1 2; do
    for kv in f32 q4res; do
      row $B "before_${kv}_$round" --kv $kv --label "before $kv r$round"
      row $AFTER "after_${kv}_$round" --kv $kv --label "after $kv r$round"
    done
    if [ $round = 1 ]; then
      timeout 100 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
      row $AFTER after_f32_32 --kv f32 --resident-steps 32 --label "after f32 32 steps"
      row $AFTER after_q4res_32 --kv q4res --resident-steps 32 --label "after q4res 32 steps"
      row $AFTER after_f32_sub0 --kv f32 --submit-every 0 --label "after f32 one submit per step"
    fi
  done
  row $AFTER after_f32_hf --kv f32 --hf --label "after f32"
  eight_k
  ;;
s17)
  # bench/device_run.sh s17 (after the three part calls; carry .whl .gl .var): each patched tree in .var/NAME/runtime,
  # two rounds interleaved: its q4res decode fold at 1K (kernel_probe, GREP) and a q4res row (prefill 512 tiled, best
  # of 2; decode 256 after 1,024), then f32 rows of the first two trees (the f32 path must not move)
  M=$(model_and_peer)
  K1="--model $M --no-reference --new-tokens 256 --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --prefill-repeats 2"
  trees=(.var/*/)
  for round in 1 2; do
    for d in "${trees[@]}"; do
      name=$(basename "$d"); P=$PWD/.site:$PWD/${d}runtime
      PYTHONPATH=$P timeout 100 python3 bench/kernel_probe.py --model $M --kv q4res --context 1024 --reps 100 \
          --out "$OUT/probe_${name}_$round.json" 2>&1 | grep -iE "${GREP:-blocks.wgsl|whole step}" | sed "s/^/$name r$round: /" | cut -c1-160
      row $P "q4res_${name}_$round" --kv q4res --label "$name q4res r$round"
    done
    for d in "${trees[@]:0:2}"; do
      name=$(basename "$d"); row $PWD/.site:$PWD/${d}runtime "f32_${name}_$round" --kv f32 --label "$name f32 r$round"
    done
  done
  ;;
gap17)
  # bench/device_run.sh gap17 (after the three part calls; carry .whl .gl): where q4res's decode step differs from
  # f32's: every kernel of the step at 1K for both modes, two rounds alternating; then decode rows alternating 4x
  M=$(model_and_peer)
  for round in 1 2; do
    for kv in f32 q4res; do
      PYTHONPATH=$AFTER timeout 100 python3 bench/kernel_probe.py --model $M --kv $kv --context 1024 --reps 100 \
          --out "$OUT/probe_${kv}_$round.json" 2>&1 | grep -iv warn | sed "s/^/$kv r$round: /" | cut -c1-170 | head -30
    done
  done
  for r in 1 2 3 4; do
    for kv in f32 q4res; do quick_decode "$AFTER" "kvab_${kv}_$r" 1024 --kv $kv --label "$kv r$r"; done
  done
  ;;
final17hf)
  # bench/device_run.sh final17hf (after the three part calls; carry .whl .gl .ll): this tree at 1K in one call, f32
  # beside Hugging Face (prefill 512 best of 3, decode 256 after 1,024), q4res, f32 again, llama.cpp at depth 1024
  M=$(model_and_peer)
  hf_table
  ;;
final17)
  # bench/device_run.sh final17 (after the three part calls; carry .whl .gl .ll .before; .before = `git archive <main>
  # runtime/bonsai bench`): the q4res decode fold of each at contexts 1,024 and 1,080 (kernel_probe), then main against this tree, f32 and
  # q4res at 1K (prefill 512 best of 2, decode 256 after 1,024) in three rounds alternating, llama.cpp at depth 1024
  # after the first, this tree at 32 steps per readback; 8K context of this tree beside llama.cpp at depth 8192; the
  # resident loop's block times (bench/resident_profile.py)
  M=$(model_and_peer)
  K1="--model $M --no-reference --new-tokens 256 --prompt-tokens 1024 --prefill-kernels tiled --batch 512 --prefill-repeats 2"
  B=$PWD/.site:$PWD/.before/runtime
  for side in before after; do
    P=$AFTER; [ $side = before ] && P=$B
    for ctx in 1024 1080; do  # the newest group's residual holds 0 and 56 positions
      PYTHONPATH=$P timeout 100 python3 bench/kernel_probe.py --model $M --kv q4res --context $ctx --reps 100 \
          --out "$OUT/probe_${side}_$ctx.json" 2>&1 | grep -iE "blocks.wgsl|whole step" | sed "s/^/$side q4res $ctx: /" | cut -c1-160
    done
  done
  for round in 1 2 3; do
    for kv in f32 q4res; do
      row $B "before_${kv}_$round" --kv $kv --label "before $kv r$round"
      row $AFTER "after_${kv}_$round" --kv $kv --label "after $kv r$round"
    done
    if [ $round = 1 ]; then
      timeout 100 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "|"
      row $AFTER after_f32_32 --kv f32 --resident-steps 32 --label "after f32 32 steps"
      row $AFTER after_q4res_32 --kv q4res --resident-steps 32 --label "after q4res 32 steps"
    fi
  done
  eight_k
  for kv in f32 q4res; do  # each 16-step block's wall time (grouped modes quantise a group in some)
    PYTHONPATH=$AFTER timeout 100 python3 bench/resident_profile.py --model $M --kv $kv --top 0 \
        --out "$OUT/profile_$kv.json" 2>&1 | grep -E "ms per token|^blocks" | cut -c1-400
  done
  ;;
s18)
  # bench/device_run.sh s18 [ROUNDS] (after the three part calls; carry .whl .gl .before; .before = `git archive <main>
  # runtime/bonsai bench`): main against this tree, decode 256 after 1,024 with f32 and q4res KV, alternating ROUNDS
  # (default 4) rounds; then each side's q4res 16-step block times (bench/resident_profile.py: fills are in some)
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  for r in $(seq 1 "${2:-4}"); do
    for kv in f32 q4res; do
      quick_decode "$B" "before_${kv}_$r" 1024 --kv $kv --label "before $kv r$r"
      quick_decode "$AFTER" "after_${kv}_$r" 1024 --kv $kv --label "after $kv r$r"
    done
  done
  for side in before after; do
    P=$AFTER; [ $side = before ] && P=$B
    PYTHONPATH=$P timeout 100 python3 bench/resident_profile.py --model $M --kv q4res --top 0 \
        --out "$OUT/profile_${side}_q4res.json" 2>&1 | grep -E "ms per token|^blocks" | sed "s/^/$side: /" | cut -c1-400
  done
  ;;
final18)
  # bench/device_run.sh final18 [ROUNDS] (after the three part calls; carry .whl .gl .ll .before; .before = `git archive
  # <main> runtime/bonsai bench`): f32 and q4res decoding in one process, alternating ROUNDS (default 10) rounds
  # (bench/kv_pair_bench.py); a q4res 512-token prefill step's kernels, main and this tree; final17hf's rows (f32
  # beside Hugging Face, q4res, f32 again) with main's q4res row beside them; llama.cpp at depth 1024; 8K context
  # beside llama.cpp at depth 8192
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  (cd bench && PYTHONPATH=$AFTER timeout 200 python3 kv_pair_bench.py --model $M --rounds "${2:-10}" \
      --out "$OUT/kv_pair.json" 2>&1 | grep -v -i warn)
  for side in before after; do
    P=$AFTER; [ $side = before ] && P=$B
    PYTHONPATH=$P timeout 100 python3 bench/kernel_probe.py --model $M --kv q4res --prefill 512 --reps 20 \
        --out "$OUT/prefill_probe_$side.json" 2>&1 | grep -iE "group.wgsl|store.wgsl|scatter|whole step|per step" \
        | sed "s/^/$side q4res prefill: /" | cut -c1-170
  done
  hf_table "$B"
  eight_k
  ;;
final19)
  # bench/device_run.sh final19 [ROUNDS] (after the three part calls; carry .whl .gl .ll .before; .before = `git archive
  # <main> runtime/bonsai bench`): ROUNDS (default 3) rounds of main's and this tree's f32 decode at 1K (decode 256
  # after 1,024, the matvec prefill once) each beside llama.cpp's tg128 at depth 1024; then final17hf's table with
  # main's q4res row, and 8K beside llama.cpp at depth 8192
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  for round in $(seq "${2:-3}"); do
    quick_decode "$B" "f32_main_$round" 1024 --kv f32 --label "main f32 r$round"
    quick_decode "$AFTER" "f32_after_$round" 1024 --kv f32 --label "this f32 r$round"
    llama_tg "llama r$round"
  done
  hf_table "$B"
  eight_k
  ;;
s20)
  # bench/device_run.sh s20 [ROUNDS] (after the three part calls; carry .whl .gl .ll .before; .before = main): ROUNDS
  # (default 3) rounds at 1K (decode 256 after 1,024, the matvec prefill once): main's f32, this tree's f32 with no
  # block ahead, one block ahead (16 and 8 steps a block), q4res one ahead, then llama.cpp's tg128 at depth 1024
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  for round in $(seq "${2:-3}"); do
    BENCH=.before/bench quick_decode "$B" "f32_main_$round" 1024 --kv f32 --label "main f32 r$round"
    quick_decode "$AFTER" "f32_ahead0_$round" 1024 --kv f32 --blocks-ahead 0 --label "f32 ahead 0 r$round"
    quick_decode "$AFTER" "f32_ahead1_$round" 1024 --kv f32 --blocks-ahead 1 --label "f32 ahead 1 r$round"
    quick_decode "$AFTER" "f32_ahead1_k8_$round" 1024 --kv f32 --blocks-ahead 1 --resident-steps 8 --label "f32 ahead 1 k8 r$round"
    quick_decode "$AFTER" "q4res_ahead1_$round" 1024 --kv q4res --blocks-ahead 1 --label "q4res ahead 1 r$round"
    llama_tg "llama r$round"
  done
  ;;
final20)
  # bench/device_run.sh final20 [ROUNDS] (as s20): ROUNDS rounds of main's and this tree's f32 and this tree's q4res
  # decode at 1K beside llama.cpp (final19's rounds), final17hf's table with main's q4res row, 8K beside llama.cpp
  M=$(model_and_peer)
  decode_rounds "${2:-3}"
  hf_table "$B"
  eight_k
  ;;
k820)
  # bench/device_run.sh k820 [ROUNDS] (as s20): a block ahead, 16 against 8 steps a block (f32, q4res), ROUNDS (default 4)
  M=$(model_and_peer)
  for round in $(seq "${2:-4}"); do
    for kv in f32 q4res; do
      quick_decode "$AFTER" "${kv}_k16_$round" 1024 --kv $kv --blocks-ahead 1 --resident-steps 16 --label "$kv k16 r$round"
      quick_decode "$AFTER" "${kv}_k8_$round" 1024 --kv $kv --blocks-ahead 1 --resident-steps 8 --label "$kv k8 r$round"
    done
  done
  llama_tg llama
  ;;
pair20)
  # bench/device_run.sh pair20 [ROUNDS] (as s20): f32 and q4res in one process, ROUNDS (default 8) alternating rounds
  # (kv_pair_bench.py), this tree (a block ahead) then main; llama.cpp tg128 at depth 1024 between and after
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  (cd bench && PYTHONPATH=$AFTER timeout 200 python3 kv_pair_bench.py --model $M --rounds "${2:-8}" \
      --out "$OUT/kv_pair_after.json" 2>&1 | grep -v -i warn | sed "s/^/this: /")
  llama_tg llama
  (cd .before/bench && PYTHONPATH=$B timeout 200 python3 kv_pair_bench.py --model $M --rounds "${2:-8}" \
      --out "$OUT/kv_pair_main.json" 2>&1 | grep -v -i warn | sed "s/^/main: /")
  llama_tg llama
  ;;
prefill20)
  # bench/device_run.sh prefill20 (as s20): prefill 512 by tile (per matrix, 64x64x4, 64x64x8; 5 interleaved rounds),
  # f32 and q4res, main's q4res beside; the prompt step's phases; llama.cpp pp512 at depth 0 and 1024
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  for kv in f32 q4res; do
    PYTHONPATH=$AFTER timeout 100 python3 bench/decode_bench.py --model $M --no-reference --prompt-tokens 64 \
        --new-tokens 16 --prefill-kernels tiled,tiled:64x64x4,tiled:64x64x8 --prefill-repeats 5 --kv $kv \
        --out "$OUT/prefill_$kv.json" 2>&1 | grep -E "^tiled|first request" | sed "s/^/$kv: /"
    PYTHONPATH=$AFTER timeout 100 python3 bench/prefill_profile.py --model $M --kv $kv --top 0 \
        --out "$OUT/phases_$kv.json" 2>&1 | grep "prefill:" | sed "s/^/$kv phases: /"
  done
  BENCH=.before/bench PYTHONPATH=$B timeout 100 python3 .before/bench/decode_bench.py --model $M --no-reference \
      --prompt-tokens 64 --new-tokens 16 --prefill-kernels tiled --prefill-repeats 5 --kv q4res \
      --out "$OUT/prefill_main_q4res.json" 2>&1 | grep -E "^tiled" | sed "s/^/main q4res: /"
  timeout 100 /root/ll/llama bench -m $M -p 512 -n 0 -d 0,1024 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep "pp512"
  ;;
probe20)
  # bench/device_run.sh probe20 (as s20): kernel_probe at 1K, q4res of main and this tree, then f32 of this tree
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  for run in "$B q4res main" "$AFTER q4res this" "$AFTER f32 this" "$B q4res main2" "$AFTER q4res this2"; do
    set -- $run
    PYTHONPATH=$1 timeout 100 python3 .before/bench/kernel_probe.py --model $M --kv $2 --context 1024 --reps 100 \
        --out "$OUT/probe_$2_$3.json" 2>&1 | grep -i "blocks.wgsl\|whole step" | sed "s/^/$2 $3: /"
  done
  ;;
s20q)
  # bench/device_run.sh s20q [ROUNDS] (as s20): q4res against f32 with a block ahead; main's q4res and f32 beside
  M=$(model_and_peer)
  B=$PWD/.site:$PWD/.before/runtime
  for round in $(seq "${2:-2}"); do
    BENCH=.before/bench quick_decode "$B" "q4res_main_$round" 1024 --kv q4res --label "main q4res r$round"
    quick_decode "$AFTER" "q4res_ahead0_$round" 1024 --kv q4res --blocks-ahead 0 --label "q4res ahead 0 r$round"
    quick_decode "$AFTER" "q4res_ahead1_$round" 1024 --kv q4res --blocks-ahead 1 --label "q4res ahead 1 r$round"
    BENCH=.before/bench quick_decode "$B" "f32_main_$round" 1024 --kv f32 --label "main f32 r$round"
    quick_decode "$AFTER" "f32_ahead1_$round" 1024 --kv f32 --blocks-ahead 1 --label "f32 ahead 1 r$round"
  done
  for kv in q4res f32; do
    PYTHONPATH=$AFTER timeout 120 python3 bench/resident_profile.py --model "$M" --kv $kv --top 14 \
        --out "$OUT/profile_$kv.json" 2>&1 | grep -v "^\s*$" | head -24 | cut -c1-160
  done
  ;;
long)
  # bench/device_run.sh long (after the part calls; carry .whl .gl .ll): long_forced on this tree
  M=$(model_and_peer)
  long_forced "$AFTER"
  ;;
compare)
  # bench/device_run.sh compare (carry also .ll/llama.xz, a copy of ../shared/device/llamacpp/llama.xz): decode/prefill at 1K (f32, q4res) and 8K beside llama.cpp -d 1024,8192
  M=$(model_and_peer)
  run() { name=$1; shift; PYTHONPATH=$AFTER timeout 200 python3 bench/decode_bench.py --model $M --no-reference "$@" \
      --out "$OUT/decode_$name.json" 2>&1 | grep -v Warning | tee "$OUT/decode_$name.txt"; }
  # with carry .before (.before/runtime = `git archive <before> runtime/bonsai`): before and after interleaved
  before() { [ -d .before/runtime ] && AFTER=$PWD/.site:$PWD/.before/runtime run "$@"; }
  K1="--prompt-tokens 1024 --new-tokens 256 --prefill-tokens 512"
  before f32_before $K1 --label "before f32 1K"
  run f32 $K1 --label "f32 1K"
  before q4res_before --kv q4res $K1 --label "before q4res 1K"
  run q4res --kv q4res $K1 --label "q4res 1K"
  timeout 240 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024,8192 -ngl 99 -r 3 -dev Vulkan0 2>&1 | tee "$OUT/llama.txt"
  run f32_8k --prompt-tokens 8000 --new-tokens 128 --prefill-tokens 512 --label "f32 8K"
  before f32_8k_before --prompt-tokens 8000 --new-tokens 128 --prefill-tokens 512 --label "before f32 8K"
  run q4res_8k --kv q4res --prompt-tokens 8000 --new-tokens 128 --prefill-tokens 512 --label "q4res 8K"
  before q4res_8k_before --kv q4res --prompt-tokens 8000 --new-tokens 128 --prefill-tokens 512 --label "before q4res 8K"
  for v in before after; do  # where a decode step's GPU time goes, per kernel
    R=$AFTER; [ $v = before ] && R=$PWD/.site:$PWD/.before/runtime; [ $v = before ] && [ ! -d .before/runtime ] && continue
    PYTHONPATH=$R timeout 100 python3 bench/kernel_probe.py --model $M --context 1024 --reps 200 --kv "${2:-f32}" --out "$OUT/kp_$v.json" \
        2>&1 | grep -v Warning | head -n 16 | sed "s/^/$v: /"
  done
  before f32_before_again $K1 --label "before f32 1K again"
  run f32_again $K1 --label "f32 1K again"
  ;;
final)
  # bench/device_run.sh final (carry .whl .gl .before .ll; .before = `git archive <before> runtime/bonsai bench`):
  # decode and the prefill kernels side by side, the version before, llama.cpp and Hugging Face in one call
  M=$(model_and_peer)
  K1="--model $M --no-reference --prompt-tokens 1024 --new-tokens 256"
  b() { name=$1; shift; PYTHONPATH=$PWD/.site:$PWD/.before/runtime timeout 150 python3 .before/bench/decode_bench.py $K1 \
      --prefill-tokens 512 "$@" --out "$OUT/$name.json" 2>&1 | grep -v Warning | tee "$OUT/$name.txt"; }
  a() { name=$1; shift; PYTHONPATH=$AFTER timeout 200 python3 bench/decode_bench.py $K1 "$@" \
      --out "$OUT/$name.json" 2>&1 | grep -v Warning | tee "$OUT/$name.txt"; }
  a after --prefill-kernels tiled,tiled:64x64x8,tiled:64x32x4,matvec --batch 512 --label "after, batch 512" --hf
  b before --label "before"
  a after_q4res --kv q4res --prefill-kernels tiled,matvec --batch 512 --label "after q4res, batch 512"
  timeout 200 /root/ll/llama bench -m $M -p 512 -n 128 -d 1024,8192 -ngl 99 -r 3 -dev Vulkan0 2>&1 | grep -v ggml_vulkan
  a after_r63 --prefill-kernels tiled --resident-steps 63 --label "after, 63 steps/readback (the most)"
  a after_b128 --prefill-kernels tiled,matvec --label "after, batch 128"
  b before_again --label "before again"
  ;;
ab)
  # bench/device_run.sh ab KV ROUNDS [CONTEXT] (carry .whl .gl .before): decode at CONTEXT (1024), before and
  # after alternating
  M=$(model_and_peer)
  for r in $(seq 1 "$3"); do
    quick_decode "$PWD/.site:$PWD/.before/runtime" "ab_before_$r" "${4:-1024}" --kv "$2" --label "before $2 r$r"
    quick_decode "$AFTER" "ab_after_$r" "${4:-1024}" --kv "$2" --label "after $2 r$r"
  done
  ;;
kvab)
  # bench/device_run.sh kvab ROUNDS (carry .whl .gl): decode at 1K, f32 and q4res KV alternating (this tree)
  M=$(model_and_peer)
  for r in $(seq 1 "$2"); do
    for kv in f32 q4res; do quick_decode "$AFTER" "kvab_${kv}_$r" 1024 --kv $kv --label "$kv r$r"; done
  done
  ;;
submit)
  # bench/device_run.sh submit ROUNDS (carry .whl .gl): decode at 1K with layers per submit 0 (one submit), 5, 10, 15
  M=$(model_and_peer)
  for r in $(seq 1 "$2"); do
    for every in 0 5 10 15; do
      quick_decode "$AFTER" "submit_${every}_$r" 1024 --submit-every $every --label "every $every r$r"
    done
  done
  ;;
profile)
  # bench/device_run.sh profile (after the three `part` calls; carry .whl .gl): the resident loop's host time, f32 and q4res
  M=$(model_and_peer)
  for kv in f32 q4res f32; do
    PYTHONPATH=$AFTER timeout 120 python3 bench/resident_profile.py --model $M --kv $kv --top ${TOP:-22} --sort ${SORT:-tottime} \
        --out "$OUT/profile_$kv.json" 2>&1 | grep -v Warning | cut -c1-150
  done
  ;;
kv)
  # needs carry [.gl, .whl, .before] where .before/runtime = `git archive <before> runtime/bonsai`
  [ -f .model/part00 ] && cp .model/part00 /root/m/part00
  PYTHONPATH=$AFTER timeout 100 python3 -c 'import sys; from bonsai.cli import main; main()' \
      verify attention --kv-len 80 --prefill 17 2>&1 | tail -n 9 | tee "$OUT/verify.txt"
  # 30 layers per call, as the default model's decode step: 30 caches do not fit the GPU's 50 MB L2
  KV="--context 32768 --heads 9 --kv-heads 3 --head-dim 64 --layers 30 --modes f32,q4 --repeats 10 --variants blocks"
  for round in 1 2; do  # before / after twice, interleaved: the machine is shared
    PYTHONPATH=$PWD/.site:$PWD/.before/runtime timeout 150 python3 bench/kv_bench.py $KV --window 4096 \
        --upload-mb 256 --chunk-kb 4096 16384 --threads 4 --label "before (round $round)" \
        --out "$OUT/kv_before_$round.json" 2>&1 | tee "$OUT/kv_before_$round.txt"
    PYTHONPATH=$AFTER timeout 200 python3 bench/kv_bench.py $KV --window 4096 \
        --upload-mb 256 --chunk-kb 1024 4096 16384 65536 --threads 4 --label "after (round $round)" \
        --out "$OUT/kv_after_$round.json" 2>&1 | tee "$OUT/kv_after_$round.txt"
  done
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
  run defaults --hf --label "defaults (blocks, window 2048, replay)"
  run defaults_q4 --kv q4 --label "defaults, q4 KV"
  if [ "${2:-}" = full ]; then  # bench/device_run.sh decode full: the rest of the comparison
    run no_replay --no-replay --label "defaults without replay"
    run no_replay_q4 --kv q4 --no-replay --label "q4 KV without replay"
    run wide --variant wide --label "wide, window 2048"
    PYTHONPATH=$AFTER timeout 150 python3 bench/profile_decode.py --model $M --context 1024 --tokens 64 --top 25 \
        2>&1 | grep -v "^$" | cut -c1-160 > "$OUT/profile.txt"; head -n 9 "$OUT/profile.txt"
  fi
  kill $SAMPLER  # (left running, it held the output pipe open until the call's time limit)
  ;;
esac
