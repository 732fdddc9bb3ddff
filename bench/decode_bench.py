"""Decode benchmark: prefill and decode tokens/s of the GPU engine beside the numpy reference forward.

Same model, same prompt, same lengths, one run. Also counts, per decoded token, the GPU dispatches
(`Gpu.dispatch_count`), queue submits and host<->GPU transfers. Prefill (512 tokens on a GPU) is timed
for each kernel of --prefill-kernels in the same process, interleaved (default: the matvec, the engine's
default, and the opt-in tiled matmul, `prefill_timing.py`), and once as the first request after loading (the engine compiles its
kernels at load, as `bonsai run` does). Prints tables and writes bench/results/decode_bench.json.
Defaults suit lavapipe; on a real GPU raise --prompt-tokens/--new-tokens.

    python bench/decode_bench.py [--model PATH] [--prompt-tokens 32] [--new-tokens 16] [--kv f32]
                                 [--prefill-kernels tiled,matvec,tiled:64x64x8] [--old-prefill]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import prefill_timing
from counters import CountingQueue, count_passes, count_reads, dispatch_cost_us

from bonsai.engine.native import load_engine
from bonsai.engine.resident import ResidentBlocks
from bonsai.gpu.recorder import Recorder
from bonsai.kv.attention import driver
from bonsai.kv.format.modes import MODES
from bonsai.models import resolve_model
from bonsai.ops import tiled
from bonsai.reference import ReferenceModel

PROMPT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
          "combined movable metal type, oil-based ink and a wooden screw press into a system that could "
          "produce books quickly and cheaply. Within a few decades printing shops had spread across Europe, ")


def bench_gpu(a, ids):
    if a.gpu_kernels:  # every kernel choice reads `is_cpu` (matmul upload, norm fusion, attention variant)
        Recorder.is_cpu = property(lambda self: False)  # type: ignore[method-assign,assignment]
    if a.old_prefill:  # the matvec for every batch, from the load on (its warm-up compiles no tiled kernel)
        tiled.MIN_TOKENS = None
    if a.block is not None:
        driver.BLOCK = a.block  # read when the cache makes its Attention
    driver.FUSE_MERGE = not a.no_fuse_merge  # likewise
    t0 = time.perf_counter()
    engine = load_engine(a.model, kv=a.kv, window=a.window, progress=False, resident_steps=a.resident_steps,
                         blocks_ahead=a.blocks_ahead,
                         max_positions=max(2048, len(ids) + a.new_tokens), warm_up=not a.no_warm_up,
                         **({"batch": a.batch} if a.batch else {}))
    load_s = time.perf_counter() - t0
    if a.prefill_tokens is None:  # 512 on a GPU; the prompt on a CPU adapter (lavapipe: minutes otherwise)
        cpu = str(engine.gpu.adapter.info.get("adapter_type", "")).lower() == "cpu"
        a.prefill_tokens = len(ids) if cpu else 512
    if a.submit_every is not None:
        engine.model.submit_every = a.submit_every
    engine.model.replay = not a.no_replay
    engine.gpu.direct_pass_calls = not a.wgpu_py_calls
    engine.gpu.native_replay = not a.no_native_replay
    if a.variant != "auto":  # attention kernel variant (bonsai.kv.attention.driver.VARIANTS)
        engine.cache.variant = a.variant  # drops the attention drivers made so far
    pf_ids = (ids * (1 + a.prefill_tokens // max(1, len(ids))))[: a.prefill_tokens]
    compiled0 = engine.gpu.compiled
    first_s = prefill_timing.time_one(engine, pf_ids)[0]  # the first request, as `bonsai run` meets it
    first_compiled = engine.gpu.compiled - compiled0
    engine.generate(ids[:4], max_tokens=2)  # warm-up: compile pipelines, create bind groups
    engine.reset()
    kernels = prefill_timing.parse_kernels(prefill_timing.MATVEC if a.old_prefill else a.prefill_kernels)
    prefill_rows = prefill_timing.compare(engine, pf_ids, kernels, a.prefill_repeats)
    q = engine.gpu.queue = CountingQueue(engine.gpu.queue)
    passes = count_passes(engine.gpu)
    if hasattr(engine.gpu, "_read_after_recorded"):
        count_reads(engine.gpu, q)
    engine.prefill_argmax(ids)
    tok = engine.model.read_token()
    probes = [dispatch_cost_us(engine.gpu) for _ in range(5)]  # the machine is shared: several probes,
    d0, s0, w0, r0, p0 = engine.gpu.dispatch_count, q.submits, q.writes, q.reads, passes[0]
    replays0 = engine.model.replays
    t0 = time.perf_counter()
    done = 0
    blocks = ResidentBlocks(engine, a.new_tokens, lambda i: None)
    while done < a.new_tokens:  # as `Engine.generate` decodes greedily: blocks of resident steps
        if a.resident_steps > 1:
            ids = blocks.take(tok, done)
            tok, done = ids[-1], done + len(ids)
        else:
            tok, done = engine._step([tok], argmax=True), done + 1
    blocks.close()
    decode_s = time.perf_counter() - t0
    n = a.new_tokens
    disp = (engine.gpu.dispatch_count - d0) / n
    counts = {"replayed_steps": engine.model.replays - replays0, "submits_per_token": (q.submits - s0) / n, "writes_per_token": (q.writes - w0) / n,
              "reads_per_token": (q.reads - r0) / n, "passes_per_token": (passes[0] - p0) / n}
    probes += [dispatch_cost_us(engine.gpu) for _ in range(5)]  # before and after the decode loop
    cost = statistics.median(probes)
    return {
        "prefill_tokens": len(pf_ids),
        "context_at_decode": f"{len(ids)}..{len(ids) + n}",
        "dispatch_cost_us": cost,
        "dispatch_cost_us_min": min(probes),
        "dispatch_cost_us_probes": probes,
        "floor_tok_s": 1e6 / (disp * cost),
        "floor_tok_s_min_cost": 1e6 / (disp * min(probes)),

        "blocks_ahead": engine.blocks_ahead,
        "engine": f"bonsai GPU ({engine.gpu.description}, kv {a.kv}"
                  + (f", attn {a.variant}" if a.variant != "auto" else "") + f", window {engine.window}"
                  + f", {a.resident_steps} steps/readback, {engine.blocks_ahead} ahead, batch {engine.batch}" + (f", block {a.block}" if a.block else "")
                  + (", merge apart" if a.no_fuse_merge else "")
                  + (", GPU kernels" if a.gpu_kernels else "") + f", prefill {prefill_rows[0]['kernel']}"
                  + (f", submit/{a.submit_every} layers)" if a.submit_every else ")"),
        "prefill_tok_s": prefill_rows[0]["prefill_tok_s"],  # the first --prefill-kernels kernel, best round
        "prefill_kernels": prefill_rows,
        "first_prefill_tok_s": len(pf_ids) / first_s,  # the first prefill after loading
        "first_prefill_compiled": first_compiled,  # pipelines it compiled (0 with the load's warm-up)
        "load_s": load_s,  # weights, and the warm-up unless --no-warm-up
        "warmed_kernels": engine.warmed_kernels,
        "decode_tok_s": n / decode_s,
        "dispatches_per_token": disp,
        **counts,
    }


def bench_reference(a, ids):
    if a.prefill_tokens != len(ids):
        ids = ids[: a.prefill_tokens] if a.prefill_tokens < len(ids) else ids
    m = ReferenceModel(resolve_model(a.model))
    m.forward(ids[:2])  # dequantise and cache every weight outside the timing
    cache = m.new_cache()
    t0 = time.perf_counter()
    logits = m.forward(ids, cache=cache)
    prefill_s = time.perf_counter() - t0
    tok = int(np.argmax(logits[-1]))
    t0 = time.perf_counter()
    for _ in range(a.new_tokens):
        tok = int(np.argmax(m.forward([tok], cache=cache)[-1]))
    decode_s = time.perf_counter() - t0
    return {"engine": "numpy reference (CPU, f32 KV)", "prefill_tok_s": len(ids) / prefill_s,
            "decode_tok_s": a.new_tokens / decode_s}


def bench_hf(a, ids):
    """Peer: Hugging Face transformers (PyTorch, eager) loading the same GGUF; greedy with its KV cache."""
    import torch
    from transformers import AutoModelForCausalLM

    path = resolve_model(a.model)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 torch_dtype=torch.float32).to(dev).eval()
    x = torch.tensor([ids], device=dev)
    pf_ids = (ids * (1 + a.prefill_tokens // max(1, len(ids))))[: a.prefill_tokens]
    xp = torch.tensor([pf_ids], device=dev)

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    with torch.no_grad():
        model(xp)  # warm-up
        sync()
        t0 = time.perf_counter()
        model(xp, use_cache=True)
        sync()
        prefill_s = (time.perf_counter() - t0)
        out = model(x, use_cache=True)
        sync()
        pkv, tok = out.past_key_values, out.logits[0, -1].argmax()
        t0 = time.perf_counter()
        for _ in range(a.new_tokens):
            out = model(tok.view(1, 1), past_key_values=pkv, use_cache=True)
            pkv, tok = out.past_key_values, out.logits[0, -1].argmax()
        sync()
        decode_s = time.perf_counter() - t0
    return {"engine": f"HF transformers {dev} float32 (eager)", "prefill_tok_s": len(pf_ids) / prefill_s,
            "decode_tok_s": a.new_tokens / decode_s}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None)
    p.add_argument("--prompt-tokens", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--prefill-tokens", type=int, default=None,
                   help="prefill timing length (default: 512 on a GPU, the prompt length on a CPU adapter)")
    p.add_argument("--prefill-kernels", default="matvec,tiled",
                   help="prefill kernels timed in this run, interleaved: tiled (the default tile), tiled:BMxBNxTM "
                        "(e.g. tiled:64x64x8; opt-in, off in the engine), matvec (the engine's default); the first one is "
                        "the main row's prefill")
    p.add_argument("--prefill-repeats", type=int, default=3, help="timed rounds per prefill kernel (best is reported)")
    p.add_argument("--old-prefill", action="store_true",
                   help="force the old prefill path (the matvec for every batch) for the whole run, load included")
    p.add_argument("--batch", type=int, default=None,
                   help="tokens per prefill step (the engine's batch; default: the engine's, 128)")
    p.add_argument("--no-warm-up", action="store_true",
                   help="load without compiling the kernels first (the first request compiles them, as before)")
    p.add_argument("--label", default="", help="prefix for the engine column (e.g. the code version)")
    p.add_argument("--kv", default="f32", choices=sorted(MODES))
    p.add_argument("--window", type=int, default=None,
                   help="KV positions per window (default: the engine's, the whole context on a GPU)")
    p.add_argument("--no-reference", action="store_true")
    p.add_argument("--submit-every", type=int, default=None,
                   help="submit every N layers (0: once per step; default: the engine's)")
    p.add_argument("--variant", default="auto", help="attention kernel variant: auto, serial, blocks")
    p.add_argument("--resident-steps", type=int, default=16,
                   help="greedy decode steps on the GPU per readback (1: one readback per token, the old loop)")
    p.add_argument("--blocks-ahead", type=int, default=None, choices=(0, 1),
                   help="blocks of resident steps recorded before the last one's readback is waited for "
                        "(default: the engine's, 1 on GPUs, 0 on CPU adapters)")
    p.add_argument("--no-fuse-merge", action="store_true",
                   help="blocks attention: merge in a dispatch of its own (merge_blocks.wgsl), not in the fold's")
    p.add_argument("--block", type=int, default=None,
                   help="positions per block of the blocks attention variant (default: the driver's BLOCK)")
    p.add_argument("--no-replay", action="store_true", help="record every decode step (no taped replay)")
    p.add_argument("--wgpu-py-calls", action="store_true",
                   help="dispatch through wgpu-py's pass methods, not wgpu-native directly (gpu/pass_ops.py)")
    p.add_argument("--no-native-replay", action="store_true",
                   help="replay a taped step's dispatches call by call, not in pass_ops.replay_native's one loop")
    p.add_argument("--gpu-kernels", action="store_true",
                   help="on a CPU adapter (lavapipe) take the GPU kernels anyway (buffer matmuls with fused norms, "
                        "blocks attention): a GPU run's dispatch counts, at the CPU's speed")
    p.add_argument("--hf", action="store_true", help="also time Hugging Face transformers (needs torch)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "decode_bench.json"))
    a = p.parse_args()
    from bonsai.gguf import GGUFReader
    from bonsai.tokenizer import Tokenizer

    tok = Tokenizer.from_gguf(GGUFReader(resolve_model(a.model)))
    base = tok.encode(PROMPT)
    ids = (base * (1 + a.prompt_tokens // len(base)))[: a.prompt_tokens]  # (was * 8: capped at 416 tokens)
    rows = [bench_gpu(a, ids)]
    if not a.no_reference:
        rows.append(bench_reference(a, ids))
    if a.hf:
        rows.append(bench_hf(a, ids))
    print(f"model {resolve_model(a.model).name}: prompt {len(ids)} tokens, {a.new_tokens} decoded, "
          f"{platform.node()}")
    if a.label:
        rows[0]["engine"] = f"{a.label}: {rows[0]['engine']}"
    g = rows[0]
    print(f"prefill timed at {a.prefill_tokens} tokens; decode at context {g['context_at_decode']}")
    print(f"{'engine':58} {'prefill tok/s':>13} {'decode tok/s':>12} {'disp/tok':>8} {'submit/tok':>10} "
          f"{'pass/tok':>8} {'write/tok':>9} {'read/tok':>8}")
    nan = float("nan")
    for r in rows:
        print(f"{r['engine'][:58]:58} {r['prefill_tok_s']:13.2f} {r['decode_tok_s']:12.2f} "
              f"{r.get('dispatches_per_token', nan):8.1f} {r.get('submits_per_token', nan):10.1f} "
              f"{r.get('passes_per_token', nan):8.1f} {r.get('writes_per_token', nan):9.1f} "
              f"{r.get('reads_per_token', nan):8.1f}")
    print(f"floor (dispatches/token x {g['dispatch_cost_us']:.2f} us per dispatch, the median of 10 probes): "
          f"{g['floor_tok_s']:.1f} tok/s; bonsai decode is {g['floor_tok_s'] / g['decode_tok_s']:.2f}x below it "
          f"({g['floor_tok_s_min_cost'] / g['decode_tok_s']:.2f}x against the fastest probe, "
          f"{g['dispatch_cost_us_min']:.2f} us)")
    for r in rows[1:]:
        print(f"bonsai / {r['engine'][:40]}: decode {g['decode_tok_s'] / r['decode_tok_s']:.2f}x, "
              f"prefill {g['prefill_tok_s'] / r['prefill_tok_s']:.2f}x")
    prefill_timing.print_table(g, a.prefill_repeats)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": str(resolve_model(a.model)), "prompt_tokens": len(ids),
                               "new_tokens": a.new_tokens, "host": platform.node(), "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
