"""Can a GPU copy from host RAM run while the GPU computes, on wgpu's one queue? (bonsai's Gpu)

Host pages (`Gpu.host_page`, host RAM the GPU copies from) are copied into VRAM buffers of their
own while one busy dispatch runs on a buffer of its own: no resource is shared, so wgpu puts no
barrier between them. Each trial is one command buffer, timed to completion; the busy dispatch's
length is chosen so that alone it takes about as long as the copies alone. Reports copies alone,
busy alone, both in each order, and the overlap: 1 - (both - max) / min (1 = fully concurrent,
0 = one after the other). Prints a table and writes bench/results/overlap_probe.json.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from results_file import write_results  # bench/, beside this script
from wgsl_file import load_kernel

from bonsai.gpu.device import Gpu


def timed(gpu: Gpu, record, repeats: int) -> float:
    """Median seconds of one trial: record, submit, wait."""
    times = []
    for _ in range(repeats + 1):
        gpu.wait()
        t0 = time.perf_counter()
        record()
        gpu.wait()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page-mib", type=int, default=8)
    p.add_argument("--pages", type=int, default=8)
    p.add_argument("--groups", type=int, default=1056, help="busy workgroups (of 64)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "overlap_probe.json"))
    a = p.parse_args()
    gpu = Gpu.create()
    size = a.page_mib << 20
    data = np.random.default_rng(0).integers(0, 2**32, size // 4, dtype=np.uint32)
    pages = [gpu.host_page(size) for _ in range(a.pages)]  # first in the process (see bench/NOTES.md, commit 84929b8)
    for page in pages:
        gpu.fill_page(page, data)
    dsts = [gpu.buffer(size) for _ in pages]
    work = gpu.buffer(a.groups * 64 * 4)
    kernel = load_kernel(gpu, "overlap_probe.wgsl")

    def copies() -> None:
        for page, dst in zip(pages, dsts, strict=True):
            gpu.stream(page, 0, dst, 0, size)
        gpu.flush()

    def busy(iters: int):
        params = gpu.upload(np.array([iters, 0, 0, 0], np.uint32))

        def record() -> None:
            gpu.dispatch(kernel, [params, work], (a.groups,))
            gpu.flush()
        return record, params

    t_copy = timed(gpu, copies, a.repeats)
    iters, t_busy = 1024, 0.0
    while iters < 1 << 26:  # busy about as long as the copies
        run, _ = busy(iters)
        t_busy = timed(gpu, run, 2)
        if t_busy >= t_copy:
            break
        iters *= 2
    run, params = busy(iters)

    def copy_then_busy() -> None:
        for page, dst in zip(pages, dsts, strict=True):
            gpu.stream(page, 0, dst, 0, size)
        gpu.dispatch(kernel, [params, work], (a.groups,))
        gpu.flush()

    def busy_then_copy() -> None:
        gpu.dispatch(kernel, [params, work], (a.groups,))
        for page, dst in zip(pages, dsts, strict=True):
            gpu.stream(page, 0, dst, 0, size)
        gpu.flush()

    rows = []
    for rnd in (1, 2):
        t_copy, t_busy = timed(gpu, copies, a.repeats), timed(gpu, run, a.repeats)
        for name, fn in (("copies, then busy", copy_then_busy), ("busy, then copies", busy_then_copy)):
            both = timed(gpu, fn, a.repeats)
            overlap = 1 - (both - max(t_copy, t_busy)) / min(t_copy, t_busy)
            rows.append({"round": rnd, "order": name, "copies_ms": t_copy * 1e3, "busy_ms": t_busy * 1e3,
                         "both_ms": both * 1e3, "sum_ms": (t_copy + t_busy) * 1e3, "overlap": overlap,
                         "copy_GBps": a.pages * size / t_copy / 1e9, "busy_iters": iters})
    ok = all(np.array_equal(np.frombuffer(gpu.read(d), np.uint32), data) for d in dsts)
    print(f"device: {gpu.description}; {a.pages} host pages of {a.page_mib} MiB -> VRAM, busy {a.groups} "
          f"workgroups x {iters} iterations; copied bits equal: {ok}")
    print(f"{'round':>5} {'order':<18} {'copies ms':>9} {'GB/s':>6} {'busy ms':>8} {'both ms':>8} {'sum ms':>7} {'overlap':>7}")
    for r in rows:
        print(f"{r['round']:>5} {r['order']:<18} {r['copies_ms']:>9.3f} {r['copy_GBps']:>6.1f} {r['busy_ms']:>8.3f} "
              f"{r['both_ms']:>8.3f} {r['sum_ms']:>7.3f} {r['overlap']:>7.2f}")
    write_results(a.out, {"device": gpu.description, "args": vars(a), "verified": ok, "rows": rows})


if __name__ == "__main__":
    main()
