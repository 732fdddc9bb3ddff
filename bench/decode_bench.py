"""Decode benchmark: prefill and decode tokens/s of the GPU engine beside the numpy reference forward.

Same model, same prompt, same lengths, one run. Also counts, per decoded token, the GPU dispatches
(`Gpu.dispatch_count`), queue submits and host<->GPU transfers. Prints a table and writes
bench/results/decode_bench.json. Defaults suit lavapipe; on a real GPU raise --prompt-tokens/--new-tokens.

    python bench/decode_bench.py [--model PATH] [--prompt-tokens 32] [--new-tokens 16] [--kv f32]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from bonsai.engine.native import load_engine
from bonsai.gpu.recorder import Recorder
from bonsai.kv.attention import driver
from bonsai.kv.format.modes import MODES
from bonsai.models import resolve_model
from bonsai.reference import ReferenceModel

PROMPT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
          "combined movable metal type, oil-based ink and a wooden screw press into a system that could "
          "produce books quickly and cheaply. Within a few decades printing shops had spread across Europe, ")


class _CountingQueue:
    """Wraps the device queue to count submits, writes and reads (the host round-trips per token).

    `Gpu.read` records its copy into the kept readback buffer in the open encoder and submits it with
    the step's work (a read is counted by `count_reads`); wgpu-py's `read_buffer` only for huge reads."""

    def __init__(self, queue):
        self._q, self.submits, self.writes, self.reads = queue, 0, 0, 0

    def submit(self, *a, **k):
        self.submits += 1
        return self._q.submit(*a, **k)

    def write_buffer(self, *a, **k):
        self.writes += 1
        return self._q.write_buffer(*a, **k)

    def read_buffer(self, *a, **k):
        self.reads += 1
        return self._q.read_buffer(*a, **k)

    def __getattr__(self, name):
        return getattr(self._q, name)


def count_reads(gpu, queue: _CountingQueue) -> None:
    """Count `Gpu.read`s (and `wait`s) as reads: they go through the kept readback buffer."""
    real = gpu._read_after_recorded

    def counted(*a, **k):
        queue.reads += 1
        return real(*a, **k)

    gpu._read_after_recorded = counted


def count_passes(gpu):
    """Count compute passes ended (a pass ends at a submit or at a buffer copy)."""
    box = [0]
    real = gpu._end_pass

    def counted():
        if gpu._pass is not None:
            box[0] += 1
        real()

    gpu._end_pass = counted
    return box


def dispatch_cost_us(gpu, n=2000):
    """Python-side cost of recording one dispatch in a shared pass (cached pipeline and bind group)."""
    import numpy as np

    k = gpu.kernel("bonsai.kv.attention", "finalize.wgsl", HEAD_DIM=64, FOLDS=1)
    prm = gpu.upload(np.array([0, 0, 1, 1, 0, 0, 0, 0], np.uint32))  # n_q * n_heads = 0: no work
    st, out = gpu.buffer(1024), gpu.buffer(1024)
    gpu.dispatch(k, [prm, st, out], 1)
    gpu.wait()
    t0 = time.perf_counter()
    for _ in range(n):
        gpu.dispatch(k, [prm, st, out], 1)
    dt = time.perf_counter() - t0
    gpu.wait()
    gpu.dispatch_count -= n + 1
    return dt / n * 1e6


def bench_gpu(a, ids):
    if a.gpu_kernels:  # every kernel choice reads `is_cpu` (matmul upload, norm fusion, attention variant)
        Recorder.is_cpu = property(lambda self: False)  # type: ignore[method-assign,assignment]
    if a.block is not None:
        driver.BLOCK = a.block  # read when the cache makes its Attention
    engine = load_engine(a.model, kv=a.kv, window=a.window, progress=False, resident_steps=a.resident_steps,
                         max_positions=max(2048, len(ids) + a.new_tokens))
    if a.submit_every is not None:
        engine.model.submit_every = a.submit_every
    engine.model.replay = not a.no_replay
    if a.variant != "auto":  # attention kernel variant (bonsai.kv.attention.driver.VARIANTS)
        engine.cache.variant = a.variant
        engine.cache._attn.clear()
    engine.generate(ids[:4], max_tokens=2)  # warm-up: compile pipelines, create bind groups
    engine.reset()
    pf_ids = (ids * (1 + a.prefill_tokens // max(1, len(ids))))[: a.prefill_tokens]
    engine.prefill_argmax(pf_ids)  # warm-up at this length (parameter buffers), then timed
    engine.reset()
    t0 = time.perf_counter()
    engine.prefill_argmax(pf_ids)
    prefill_s = time.perf_counter() - t0
    engine.reset()
    q = engine.gpu.queue = _CountingQueue(engine.gpu.queue)
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
    while done < a.new_tokens:  # as `Engine.generate` decodes greedily: blocks of resident steps
        k = min(a.resident_steps, a.new_tokens - done)
        tok = engine._steps_on_gpu(tok, k, lambda j: None)[-1] if a.resident_steps > 1 else engine._step([tok], argmax=True)
        done += k
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

        "engine": f"bonsai GPU ({engine.gpu.description}, kv {a.kv}"
                  + (f", attn {a.variant}" if a.variant != "auto" else "") + f", window {a.window}"
                  + f", {a.resident_steps} steps/readback" + (f", block {a.block}" if a.block else "")
                  + (", GPU kernels" if a.gpu_kernels else "")
                  + (f", submit/{a.submit_every} layers)" if a.submit_every else ")"),
        "prefill_tok_s": len(pf_ids) / prefill_s,  # the timed prefill (was len(ids): the decode context)
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
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--prompt-tokens", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--prefill-tokens", type=int, default=None, help="prefill timing length (default: prompt)")
    p.add_argument("--label", default="", help="prefix for the engine column (e.g. the code version)")
    p.add_argument("--kv", default="f32", choices=sorted(MODES))
    p.add_argument("--window", type=int, default=2048)
    p.add_argument("--no-reference", action="store_true")
    p.add_argument("--submit-every", type=int, default=None,
                   help="submit every N layers (0: once per step; default: the engine's)")
    p.add_argument("--variant", default="auto", help="attention kernel variant: auto, serial, blocks")
    p.add_argument("--resident-steps", type=int, default=16,
                   help="greedy decode steps on the GPU per readback (1: one readback per token, the old loop)")
    p.add_argument("--block", type=int, default=None,
                   help="positions per block of the blocks attention variant (default: the driver's BLOCK)")
    p.add_argument("--no-replay", action="store_true", help="record every decode step (no taped replay)")
    p.add_argument("--gpu-kernels", action="store_true",
                   help="on a CPU adapter (lavapipe) take the GPU kernels anyway (buffer matmuls with fused norms, "
                        "blocks attention): a GPU run's dispatch counts, at the CPU's speed")
    p.add_argument("--hf", action="store_true", help="also time Hugging Face transformers (needs torch)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "decode_bench.json"))
    a = p.parse_args()
    if a.prefill_tokens is None:
        a.prefill_tokens = a.prompt_tokens
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
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": str(resolve_model(a.model)), "prompt_tokens": len(ids),
                               "new_tokens": a.new_tokens, "host": platform.node(), "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
