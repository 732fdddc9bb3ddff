"""Where a decode token's host time goes: cProfile over N decode steps of the engine (prints the top entries).

    python bench/profile_decode.py [--model PATH] [--context 1024] [--tokens 64] [--kv f32] [--top 30]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

from bonsai.engine.native import load_engine
from bonsai.kv.attention.driver import Attention
from bonsai.kv.store.scatter import Scatter
from bonsai.kv.store.store import Store
from bonsai.ops import matmul, rmsnorm, rope

PROMPT = "The history of the printing press begins in the fifteenth century. "


SKIPPABLE = {  # the dispatching functions of each kind of kernel in a decode step
    "attention (fold+merge+final)": [(Attention, "fold_window"), (Attention, "finish")],
    "matmuls (qkv, wo, ffn, out)": [(matmul, "dispatch")],
    "rmsnorm": [(rmsnorm, "dispatch")],
    "rope": [(rope, "dispatch")],
    "kv store + scatter": [(Store, "record"), (Scatter, "record")],
}


def gpu_step_ms(engine, tok: int, steps: int = 8) -> float:
    """Median ms from submitting one fully recorded decode step to having its token back."""
    every, engine.model.submit_every = engine.model.submit_every, 0
    replay, engine.model.replay = engine.model.replay, False  # record every step: the skipped kinds must go
    times = []
    for _ in range(steps):
        engine.model.record([tok], engine.pos, all_logits=False)
        t1 = time.perf_counter()
        engine.model.token_from(engine.cache.sync_host(also=(engine.model.act.token, 4)))
        times.append(time.perf_counter() - t1)
    engine.model.submit_every, engine.model.replay = every, replay
    return statistics.median(times) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--context", type=int, default=1024, help="positions fed before the profiled steps")
    p.add_argument("--tokens", type=int, default=64, help="decode steps profiled")
    p.add_argument("--kv", default="f32")
    p.add_argument("--top", type=int, default=30)
    a = p.parse_args()
    engine = load_engine(a.model, kv=a.kv, progress=False, max_positions=a.context + 3 * a.tokens + 32)
    ids = (engine.tokenizer.encode(PROMPT) * (a.context // 8 + 1))[: a.context]
    tok = engine.prefill_argmax(ids)
    for _ in range(8):  # warm: pipelines, bind groups, parameter buffers
        tok = engine._step([tok], argmax=True)
    t0 = time.perf_counter()
    for _ in range(a.tokens):
        tok = engine._step([tok], argmax=True)
    plain = (time.perf_counter() - t0) / a.tokens
    recording = reading = 0.0  # the same step body, phases timed (no profiler)
    dispatches = engine.gpu.dispatch_count
    for _ in range(a.tokens):
        t1 = time.perf_counter()
        engine.model.record([tok], engine.pos, all_logits=False)
        t2 = time.perf_counter()
        tok = engine.model.token_from(engine.cache.sync_host(also=(engine.model.act.token, 4)))
        t3 = time.perf_counter()
        engine.fed.append(tok)
        engine.pos += 1
        recording, reading = recording + t2 - t1, reading + t3 - t2
    per_token = (engine.gpu.dispatch_count - dispatches) / a.tokens
    full = gpu_step_ms(engine, tok)
    print(f"GPU time of one step submitted at once (+ one round trip): {full:.2f} ms; without each kind of "
          "kernel (results wrong, timing only):")
    for kind, targets in SKIPPABLE.items():
        saved = [(owner, name, getattr(owner, name)) for owner, name in targets]
        for owner, name, _ in saved:
            setattr(owner, name, lambda *args, **kwargs: None)
        try:
            without = gpu_step_ms(engine, tok)
        finally:
            for owner, name, real in saved:
                setattr(owner, name, real)
        print(f"  {kind:<28} {full - without:6.2f} ms of GPU time per step")
    print(f"per token: record {recording / a.tokens * 1e3:.2f} ms ({per_token:.0f} dispatches), "
          f"GPU tail + readback {reading / a.tokens * 1e3:.2f} ms")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(a.tokens):
        tok = engine._step([tok], argmax=True)
    prof.disable()
    print(f"{engine.gpu.description}: {plain * 1e3:.2f} ms per decode token unprofiled "
          f"({1 / plain:.1f} tok/s) at context {a.context}; profile of {a.tokens} more steps:")
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(a.top)
    stats.sort_stats("cumtime").print_stats(a.top)


if __name__ == "__main__":
    main()
