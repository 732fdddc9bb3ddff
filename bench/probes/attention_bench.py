"""One layer's attention call on this device, per KV mode and query count: ms per call (wall and CPU).

The default model's shapes (9 query heads over 3 KV heads, head_dim 64) over a cache of --context
positions stored as the mode stores them (`diagnostics.exactness.stored`: grouped modes with their f32
residual), one window, the `--variant` kernel (default: the device's own). Each call is recorded
--reps times into one submit and waited for. With --baseline DIR (another runtime tree, e.g.
`git archive <commit> runtime | tar -x -C DIR`) every case also runs there, interleaved, each tree in
its own worker process, so the ratios come from one run. CPU seconds count every thread of the worker
(lavapipe runs kernels on the process's threads): steadier than wall time on a shared machine.

    python bench/probes/attention_bench.py [--kv f32 q4res] [--context 1024] [--queries 1 128] [--baseline DIR/runtime]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # probes/, bench/
from results_file import write_results  # noqa: E402
from tree_workers import in_worker, ratios  # noqa: E402

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


def run_case(kv: str, context: int, n_q: int, reps: int, variant: str) -> dict:
    """ms per attention call (wall, CPU) in this process."""
    from bonsai.diagnostics.exactness import Case, case_data, stored, windows_for
    from bonsai.gpu.device import Gpu
    from bonsai.kv.attention.driver import Attention
    from bonsai.kv.format.modes import get_mode

    gpu = Gpu.create()
    case = Case(9, 3, 64, kv, context, n_q)
    q, k, v = case_data(case)
    ks, vs, res = stored(k, v, kv)
    m = get_mode(kv)
    bufs = [gpu.upload(a) if a.size else gpu.buffer(16) for a in (ks, vs, res)]
    v_pos_words = case.n_kv * (case.head_dim if m.v_residual else vs.shape[-1])
    windows = windows_for(kv, context, v_pos_words, context, *bufs)
    att = Attention(gpu, 9, 3, 64, m, variant=variant)
    q_buf, out, state = gpu.upload(q), gpu.buffer(q.nbytes), gpu.buffer(att.state_bytes(n_q))
    att.record(q_buf, out, state, case.pos_base, n_q, windows)  # compile, make every buffer
    gpu.flush()
    gpu.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(reps):
        att.record(q_buf, out, state, case.pos_base, n_q, windows)
    gpu.flush()
    gpu.wait()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"kv": kv, "context": context, "n_q": n_q, "variant": att.variant, "reps": reps,
            "ms": 1000 * wall / reps, "cpu_ms": 1000 * cpu / reps, "device": gpu.description}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv", nargs="+", default=["f32", "q4res"])
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--queries", nargs="+", type=int, default=[1, 128])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--variant", default="auto")
    ap.add_argument("--baseline", type=Path, default=None, help="another runtime tree to interleave with")
    ap.add_argument("--out", default="bench/results/attention_bench.json")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        kv, context, n_q, reps, variant = args.worker
        print(json.dumps(run_case(kv, int(context), int(n_q), int(reps), variant)))
        return
    trees = [("this", RUNTIME)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    rows = []
    print(f"{'tree':<9} {'kv':<6} {'context':>7} {'queries':>7} {'variant':<7} {'ms/call':>9} {'CPU ms/call':>12} "
          f"{'baseline/this (wall, CPU)':>26}")
    for kv in args.kv:
        for n_q in args.queries:
            got = {}
            for name, tree in trees:
                r = in_worker(__file__, tree, [kv, str(args.context), str(n_q), str(args.reps), args.variant])
                r["tree"] = name
                got[name] = r
                rows.append(r)
                ratio = ratios(got, "ms", "cpu_ms")
                print(f"{name:<9} {kv:<6} {args.context:>7} {n_q:>7} {r['variant']:<7} {r['ms']:>9.1f} "
                      f"{r['cpu_ms']:>12.1f} {ratio:>26}", flush=True)
    write_results(args.out, {"bench": "attention", "machine": platform.node(), "runs": rows})


if __name__ == "__main__":
    main()
