"""Where a prefill step's wall time goes: recording (with its submits), the GPU finishing, the readback.

Times one `--tokens`-token prefill from position 0 in three phases, `--repeats` times after a warm-up:
`record` (Python choosing and recording the dispatches; submits happen inside it), `gpu` (waiting for
the queue to go idle after it), `sync` (`KVCache.sync_host`: the step's K/V rows read back and committed
to the host master, the argmax id with them). Then one cProfile of a whole prefill, top entries by own time.

    python bench/prefill_profile.py [--model PATH] [--kv f32] [--tokens 512] [--repeats 5] [--top 20]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from pathlib import Path

from results_file import write_results

from bonsai.engine.native import load_engine

PROMPT = "The history of the printing press begins in the fifteenth century. "


def phases(engine, ids: list[int]) -> dict[str, float]:
    """Seconds of each phase of one prefill step of `ids` at position 0."""
    engine.reset()
    t0 = time.perf_counter()
    engine.model.record(ids, 0, all_logits=False)
    t1 = time.perf_counter()
    engine.gpu.wait()
    t2 = time.perf_counter()
    engine.cache.sync_host(also=(engine.model.act.token, 4))
    t3 = time.perf_counter()
    engine.reset()
    return {"record": t1 - t0, "gpu": t2 - t1, "sync": t3 - t2, "total": t3 - t0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--kv", default="f32")
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "prefill_profile.json"))
    a = p.parse_args()
    engine = load_engine(a.model, kv=a.kv, progress=False, warm_up=True, batch=a.tokens,
                         max_positions=a.tokens + 64)
    ids = (engine.tokenizer.encode(PROMPT) * (a.tokens // 8 + 1))[: a.tokens]
    phases(engine, ids)  # warm: parameter buffers, bind groups
    runs = [phases(engine, ids) for _ in range(a.repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"{engine.gpu.description}, kv {a.kv}, {a.tokens}-token prefill step, median of {a.repeats}:")
    print("| phase | ms | share |\n| --- | ---: | ---: |")
    for k in ("record", "gpu", "sync", "total"):
        print(f"| {k} | {med[k] * 1e3:.2f} | {med[k] / med['total']:.0%} |")
    print(f"prefill: {a.tokens / med['total']:,.0f} tok/s")
    prof = cProfile.Profile()
    prof.enable()
    engine.reset()
    engine.prefill_argmax(ids)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(a.top)
    print(text.getvalue())
    write_results(a.out, {"kv": a.kv, "tokens": a.tokens, "repeats": a.repeats,
                          "median_ms": {k: v * 1e3 for k, v in med.items()}, "runs": runs})


if __name__ == "__main__":
    main()
