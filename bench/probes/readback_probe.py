"""What does one GPU round trip cost once host pages exist? (bonsai's Gpu and plain wgpu-py)

wgpu-py's `queue.read_buffer` makes a MAP_READ buffer for every read and destroys it after. Host
pages (`Gpu.host_page`) are MAP_READ buffers too, so they come from the same kind of memory. This
probe times a 4-byte round trip both ways at each stage of making, filling, streaming and freeing
host pages: `queue.read_buffer`, and a copy into one MAP_READ buffer made at the start and kept
(`--reads`: both, or only one of them, so that the other's buffer does not change where pages land). Prints a table and writes bench/results/readback_probe.json.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import wgpu  # noqa: E402
from results_file import write_results  # bench/, beside this script  # noqa: E402

from bonsai.gpu.device import Gpu  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page-mib", type=int, default=8)
    p.add_argument("--pages", type=int, default=8)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--reads", choices=("both", "temporary", "kept"), default="both")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "readback_probe.json"))
    a = p.parse_args()
    gpu = Gpu.create()
    kept = (gpu.device.create_buffer(size=256, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            if a.reads != "temporary" else None)
    src = gpu.buffer(256)

    def temporary() -> bytes:
        return bytes(gpu.queue.read_buffer(src, 0, 4))

    def keep() -> bytes:
        enc = gpu.device.create_command_encoder()
        enc.copy_buffer_to_buffer(src, 0, kept, 0, 4)
        gpu.queue.submit([enc.finish()])
        kept.map_sync(wgpu.MapMode.READ, 0, 8)
        try:
            return bytes(kept.read_mapped(0, 4))
        finally:
            kept.unmap()

    rows = []

    def stage(label: str) -> None:
        for kind, name, fn in (("temporary", "queue.read_buffer", temporary), ("kept", "kept readback", keep)):
            if a.reads not in ("both", kind):
                continue
            times = []
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            rows.append({"stage": label, "read": name, "median_ms": statistics.median(times) * 1e3,
                         "min_ms": min(times) * 1e3})

    size = a.page_mib << 20
    stage("fresh device")
    dsts = [gpu.buffer(size) for _ in range(a.pages)]
    stage(f"{a.pages} VRAM buffers of {a.page_mib} MiB")
    pages = [gpu.host_page(size) for _ in range(a.pages)]
    stage(f"{a.pages} host pages of {a.page_mib} MiB")
    data = np.random.default_rng(0).integers(0, 2**32, size // 4, dtype=np.uint32)
    for page in pages:
        gpu.fill_page(page, data)
    stage("pages filled")
    for page, dst in zip(pages, dsts, strict=True):
        gpu.stream(page, 0, dst, 0, size)
    gpu.flush()
    stage("pages streamed")
    ok = all(np.array_equal(np.frombuffer(gpu.read(d), np.uint32), data) for d in dsts)
    del pages
    stage("pages freed")
    print(f"device: {gpu.description}; round trip of 4 bytes, median of {a.repeats}; streamed bits equal: {ok}")
    print(f"{'stage':<28} {'read':<18} {'median ms':>9} {'min ms':>8}")
    for r in rows:
        print(f"{r['stage']:<28} {r['read']:<18} {r['median_ms']:>9.3f} {r['min_ms']:>8.3f}")
    write_results(a.out, {"device": gpu.description, "args": vars(a), "verified": ok, "rows": rows})


if __name__ == "__main__":
    main()
