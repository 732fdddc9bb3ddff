"""When a readback's map resolves if the next block of work is submitted before or after the map is requested.

Two blocks of a slow kernel (map_order.wgsl), each followed by a copy into its own MAP_READ buffer; the first
block's map is requested before the second block's submit (what `Gpu.read_soon` does) or after it. wgpu-py's poll
thread waits for the newest submission there is when a map is requested, so the second order should resolve the
first map only when both blocks are done. Prints a table (ms from the first submit) and writes JSON.

    python bench/probes/map_order_probe.py [--iters 300000] [--rounds 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from results_file import write_results  # noqa: E402
from wgsl_file import load_kernel  # noqa: E402

from bonsai.gpu.device import Gpu  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=300_000, help="multiply-adds per invocation (sets a block's time)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "map_order_probe.json"))
    a = p.parse_args()
    gpu = Gpu.create()
    wgpu, dev = gpu._wgpu, gpu.device
    kernel = load_kernel(gpu, "probes/map_order.wgsl", ITERS=a.iters)
    buf = gpu.buffer(4 * 64 * 8)
    usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
    reads = [dev.create_buffer(size=256, usage=usage) for _ in range(2)]
    bind = dev.create_bind_group(layout=kernel.pipeline.get_bind_group_layout(0),
                                 entries=[{"binding": 0, "resource": {"buffer": buf}}])

    def block(into) -> None:
        enc = dev.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(kernel.pipeline)
        cp.set_bind_group(0, bind)
        cp.dispatch_workgroups(8)
        cp.end()
        enc.copy_buffer_to_buffer(buf, 0, into, 0, 256)
        dev.queue.submit([enc.finish()])

    def run(map_first: bool) -> tuple[float, float]:
        t0 = time.perf_counter()
        block(reads[0])
        if map_first:
            first = reads[0].map_async(wgpu.MapMode.READ)
            block(reads[1])
        else:
            block(reads[1])
            first = reads[0].map_async(wgpu.MapMode.READ)
        first.sync_wait()
        t_first = time.perf_counter() - t0
        reads[1].map_sync(wgpu.MapMode.READ)
        t_both = time.perf_counter() - t0
        for r in reads:
            r.unmap()
        return t_first * 1e3, t_both * 1e3

    run(True)  # warm: compile, first submits
    rows = []
    for order, map_first in (("map requested before the next submit", True), ("map requested after it", False)):
        runs = [run(map_first) for _ in range(a.rounds)]
        rows.append({"order": order, "first_map_ms": statistics.median(r[0] for r in runs),
                     "both_done_ms": statistics.median(r[1] for r in runs), "runs_ms": runs})
    print(f"{gpu.description}: two blocks of {a.iters} multiply-adds per invocation, median of {a.rounds}")
    print("| order | first map resolved, ms | both blocks read, ms |")
    print("| --- | ---: | ---: |")
    for r in rows:
        print(f"| {r['order']} | {r['first_map_ms']:.2f} | {r['both_done_ms']:.2f} |")
    write_results(a.out, {"adapter": gpu.description, "iters": a.iters, "rows": rows})


if __name__ == "__main__":
    main()
