"""Where a prompt's GPU time goes in the real flow, by the GPU's own clock: timestamps around every compute pass
(and after every dispatch) of `Engine.prefill_argmax`, as decode_bench's prefill rows and a user's first token run it.

`kernel_probe.py` replays a prompt step in one pass; the flow records it in passes of a few layers, each submitted
with a read of the rows so far (`GpuModel.batch_submit_every`, `KVCache.read_ahead`). This shows the flow's passes
on the GPU: each one's time, the GPU's idle gaps between them, and (second run) the flow's time by kernel, to set
beside the replay's. Needs timestamp-query and timestamp-query-inside-passes (lavapipe and NVIDIA's Vulkan have them).
Prints tables and writes JSON.

    python bench/probes/prefill_gpu_timeline.py [--model PATH] [--tokens 512] [--kv q4res] [--runs 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from gpu_timeline import FEATURES, TimelineGpu  # bench/: a Gpu with timestamps around passes  # noqa: E402
from kernel_probe import PROMPT, _names  # bench/: the probe's prompt and kernel names  # noqa: E402
from results_file import write_results  # noqa: E402

from bonsai.engine.native import load_engine  # noqa: E402
from bonsai.kv.format.modes import MODES  # noqa: E402

SHOWN = 48  # passes printed (a CPU adapter's flow has a pass per few dispatches; a GPU's, one per two layers)


def timed_prefill(engine: Any, gpu: TimelineGpu, ids: list[int], per_dispatch: bool) -> dict:
    """One prefill from an empty cache with timestamps: its passes (ms from the first pass's start) and, with
    `per_dispatch`, each dispatch's time from the one before it ends to its own end, by kernel."""
    engine.reset()
    gpu.wait()
    gpu.begin_timing(per_dispatch)
    t0 = time.perf_counter()
    engine.prefill_argmax(ids)
    gpu.wait()
    wall = time.perf_counter() - t0
    spans, per_kernel = gpu.end_timing()
    start = spans[0][0]
    passes = [{"start_ms": (a - start) / 1e6, "ms": (b - a) / 1e6, "dispatches": len(p["dispatches"])}
              for (a, b), p in zip(spans, gpu.passes, strict=True)]
    gaps = [(spans[i + 1][0] - spans[i][1]) / 1e6 for i in range(len(spans) - 1)]
    engine.reset()
    return {"wall_ms": wall * 1e3, "busy_ms": sum(p["ms"] for p in passes), "span_ms": (spans[-1][1] - start) / 1e6,
            "gaps_ms": gaps, "passes": passes, "per_kernel": per_kernel, "per_dispatch": per_dispatch}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None)
    p.add_argument("--tokens", type=int, default=512, help="prompt tokens (one step: the batch is this size)")
    p.add_argument("--kv", default="q4res", choices=sorted(MODES))
    p.add_argument("--runs", type=int, default=3, help="timed runs with timestamps around passes only")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "prefill_gpu_timeline.json"))
    a = p.parse_args()
    gpu = TimelineGpu.create(extra_features=FEATURES)
    missing = [f for f in FEATURES if f not in gpu.device.features]
    if missing:
        raise SystemExit(f"{gpu.description} lacks {', '.join(missing)}: no GPU timestamps here")
    engine = load_engine(a.model, gpu=gpu, kv=a.kv, progress=False, warm_up=True, batch=a.tokens,
                         max_positions=a.tokens + 64)
    base = engine.tokenizer.encode(PROMPT)
    ids = (base * (1 + a.tokens // len(base)))[: a.tokens]
    print(f"prefill_gpu_timeline: loaded; {len(ids)} tokens, two warm prefills", file=sys.stderr, flush=True)
    for _ in range(2):
        engine.reset()
        engine.prefill_argmax(ids)
    runs = [timed_prefill(engine, gpu, ids, False) for _ in range(a.runs)]
    by_kernel = timed_prefill(engine, gpu, ids, True)
    print(f"{gpu.description}, kv {a.kv}, {len(ids)}-token prefill from an empty cache, by the GPU's clock (ms)")
    print("| run | wall | GPU span (first pass start to last end) | GPU busy (passes summed) | gaps summed | passes "
          "| largest gap |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for i, r in enumerate([*runs, by_kernel]):
        label = "timestamp per dispatch" if r["per_dispatch"] else str(i + 1)
        print(f"| {label} | {r['wall_ms']:.3f} | {r['span_ms']:.3f} | {r['busy_ms']:.3f} | {sum(r['gaps_ms']):.3f} | "
              f"{len(r['passes'])} | {max(r['gaps_ms'], default=0.0):.3f} |")
    best = min(runs, key=lambda r: r["wall_ms"])
    print("\n| pass (fastest run) | starts at | ms | dispatches | gap after |\n| ---: | ---: | ---: | ---: | ---: |")
    for i, ps in enumerate(best["passes"][:SHOWN]):
        gap = best["gaps_ms"][i] if i < len(best["gaps_ms"]) else 0.0
        print(f"| {i} | {ps['start_ms']:.3f} | {ps['ms']:.3f} | {ps['dispatches'] or ''} | {gap:.3f} |")
    if len(best["passes"]) > SHOWN:
        print(f"({len(best['passes']) - SHOWN} more passes in the JSON)")
    names = _names(gpu)
    kernels = sorted(({"kernel": names.get(pipe, "?"), "n": len(us), "median_us": statistics.median(us),
                       "us": sum(us)} for pipe, us in by_kernel["per_kernel"].items()), key=lambda k: -k["us"])
    print("\n| kernel (timestamp per dispatch) | n | median us | us in the step |\n| --- | ---: | ---: | ---: |")
    for k in kernels:
        print(f"| {k['kernel'][:60]} | {k['n']} | {k['median_us']:.2f} | {k['us']:.1f} |")
    strip = lambda r: {k: v for k, v in r.items() if k != "per_kernel"}  # noqa: E731
    write_results(a.out, {"adapter": gpu.description, "kv": a.kv, "tokens": len(ids),
                          "runs": [strip(r) for r in runs], "by_kernel_run": strip(by_kernel), "kernels": kernels})


if __name__ == "__main__":
    main()
