"""Where a decode token's host time goes: cProfile over N decode steps of the engine (prints the top entries).

    python bench/profile_decode.py [--model PATH] [--context 1024] [--tokens 64] [--kv f32] [--top 30]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from bonsai.engine.native import load_engine

PROMPT = "The history of the printing press begins in the fifteenth century. "


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
    tok = engine.prefill(ids, want="token")
    for _ in range(8):  # warm: pipelines, bind groups, parameter buffers
        tok = engine._step([tok], all_logits=False, want="token")
    t0 = time.perf_counter()
    for _ in range(a.tokens):
        tok = engine._step([tok], all_logits=False, want="token")
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
    every, engine.model.submit_every = engine.model.submit_every, 0  # GPU time: record all, then submit and wait
    gpu_s = 0.0
    for _ in range(8):
        engine.model.record([tok], engine.pos, all_logits=False)
        t1 = time.perf_counter()
        tok = engine.model.token_from(engine.cache.sync_host(also=(engine.model.act.token, 4)))
        gpu_s += time.perf_counter() - t1
        engine.fed.append(tok)
        engine.pos += 1
    engine.model.submit_every = every
    print(f"GPU time of one step submitted at once (+ one round trip): {gpu_s / 8 * 1e3:.2f} ms")
    print(f"per token: record {recording / a.tokens * 1e3:.2f} ms ({per_token:.0f} dispatches), "
          f"GPU tail + readback {reading / a.tokens * 1e3:.2f} ms")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(a.tokens):
        tok = engine._step([tok], all_logits=False, want="token")
    prof.disable()
    print(f"{engine.gpu.description}: {plain * 1e3:.2f} ms per decode token unprofiled "
          f"({1 / plain:.1f} tok/s) at context {a.context}; profile of {a.tokens} more steps:")
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(a.top)
    stats.sort_stats("cumtime").print_stats(a.top)


if __name__ == "__main__":
    main()
