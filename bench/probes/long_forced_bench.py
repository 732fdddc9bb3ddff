"""Engine seconds of issue 16's long forced decoding (1,100 tokens), per KV mode and window, on this device.

Each (kv, window) case runs `long_forced.schedule`'s steps (batched 128-token prefill steps, then a few
one-token decode steps) through `Engine.forward` from position 0, as `LongForced.check` does, and times
the whole run and every step; no reference, no scoring. Each run happens in a fresh worker process
(model load not timed). With --baseline DIR the same cases also run on another runtime tree (e.g.
`git archive <commit> runtime | tar -x -C DIR`), interleaved case by case with this tree's, so the
ratios come from one run of this script. CPU seconds (every thread of the worker: lavapipe runs the
kernels on the process's own threads) move far less than wall seconds when other work shares the
cores, so the ratio is given for both. Prints a table and writes JSON.

    python bench/probes/long_forced_bench.py [--kv f32 q4res] [--window 2048 384] [--baseline DIR/runtime] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # probes/, bench/
from results_file import write_results  # noqa: E402
from tree_workers import in_worker, ratios  # noqa: E402

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


def run_case(kv: str, window: int) -> dict:
    """One forced run in this process: total engine seconds and per-step seconds."""
    from bonsai.diagnostics import long_forced as lf
    from bonsai.diagnostics.numpy_cache import NumpyKVCache
    from bonsai.engine.native import load_engine

    engine = load_engine(None, max_positions=lf.TOKENS, cache_factory=NumpyKVCache, progress=False)
    ids = lf.long_text_ids(engine.tokenizer)
    steps = lf.schedule(len(ids) - 1, engine.batch)
    engine.use_cache(kv=kv, window=window)
    engine.reset()
    engine.forward(list(ids[:2]))  # compile the step's kernels outside the timing (as the test's earlier cases do)
    engine.reset()
    per_step = []
    t0, c0 = time.perf_counter(), time.process_time()
    for s, e in steps:
        t = time.perf_counter()
        engine.forward(list(ids[s:e]))
        per_step.append({"start": s, "tokens": e - s, "seconds": time.perf_counter() - t})
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"kv": kv, "window": window, "seconds": total, "cpu_seconds": cpu, "steps": per_step,
            "device": engine.gpu.description}


def summary(r: dict) -> tuple[float, float, float, float, float]:
    """(total s, CPU s, first prefill step s, last prefill step s, mean decode step s)."""
    pre = [s["seconds"] for s in r["steps"] if s["tokens"] > 1]
    dec = [s["seconds"] for s in r["steps"] if s["tokens"] == 1]
    return r["seconds"], r["cpu_seconds"], pre[0], pre[-1], sum(dec) / max(1, len(dec))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv", nargs="+", default=["f32", "q4res"])
    ap.add_argument("--window", nargs="+", type=int, default=None, help="default: 2048 and the split window")
    ap.add_argument("--baseline", type=Path, default=None, help="another runtime tree to interleave with")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", default="bench/results/long_forced.json")
    ap.add_argument("--worker", nargs=2, metavar=("KV", "WINDOW"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(run_case(args.worker[0], int(args.worker[1]))))
        return
    sys.path.insert(0, str(RUNTIME))
    from bonsai.diagnostics.forced_plan import TOKENS, split_window

    windows = args.window or [2048, split_window(TOKENS)]
    trees = [("this", RUNTIME)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    rows = []
    print(f"{'tree':<9} {'kv':<6} {'window':>6} {'engine s':>9} {'CPU s':>7} {'1st prefill s':>14} "
          f"{'last prefill s':>15} {'decode s':>9} {'baseline/this (wall, CPU)':>26}")
    for _ in range(args.repeat):
        for kv in args.kv:
            for window in windows:
                got = {}
                for name, tree in trees:
                    r = in_worker(__file__, tree, [kv, str(window)])
                    r["tree"], r["runtime"] = name, str(tree)
                    got[name] = r
                    rows.append(r)
                    total, cpu, first, last, dec = summary(r)
                    ratio = ratios(got, "seconds", "cpu_seconds")
                    print(f"{name:<9} {kv:<6} {window:>6} {total:>9.1f} {cpu:>7.1f} {first:>14.2f} {last:>15.2f} "
                          f"{dec:>9.2f} {ratio:>26}", flush=True)
    write_results(args.out, {"bench": "long_forced", "machine": platform.node(), "tokens": TOKENS,
                             "device": rows[0]["device"] if rows else "", "runs": rows})


if __name__ == "__main__":
    main()
