"""KV benchmark: attention throughput per cache mode (every `bonsai.kv.format.modes` mode by default,
resident vs streamed windows) and host->GPU window upload bandwidth (queue.write_buffer vs a ring of
mapped staging buffers), side by side.

Prints a table and writes bench/results/kv_bench.json. Defaults are small enough for lavapipe;
on a real GPU raise them, e.g.:
    python bench/kv_bench.py --context 32768 --window 1024 --heads 32 --kv-heads 8 --head-dim 128 \
        --upload-mb 1024 --chunk-mb 16 --repeats 20
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
from bonsai.gpu.device import Gpu
from bonsai.kv.attention import driver as attention
from bonsai.kv.format.modes import MODES

PLACEMENTS = ("resident", "streamed")


def bench_attention(gpu: Gpu, a: argparse.Namespace, mode: str, placement: str, variant: str, window: int) -> dict:
    """Decode attention over `context` positions: seconds per call and cache GB/s read.

    placement: "resident" (every window in VRAM) or "streamed" (a VRAM budget of `budget_frac` of the
    cache; other windows are streamed in from the host master)."""
    rng = np.random.default_rng(0)
    probe = KVCache(gpu, a.layers, a.kv_heads, a.head_dim, a.context, mode=mode, window=window)
    n_slots = max(1, int(probe.layout.n_windows * a.layers * a.budget_frac))
    budget = None if placement == "resident" else n_slots * probe.slot_bytes
    cache = KVCache(gpu, a.layers, a.kv_heads, a.head_dim, a.context, mode=mode, window=window, vram_budget=budget,
                    **({"variant": variant} if variant != "auto" else {}))
    chunk = min(a.context, 4096)
    for pos in range(0, a.context, chunk):
        n = min(chunk, a.context - pos)
        kv = rng.standard_normal((n, a.kv_heads, a.head_dim)).astype(np.float32)
        for layer in range(a.layers):  # the same rows in every layer: separate memory is what counts
            cache.append_host(layer, kv, kv, pos)
    q = gpu.upload(rng.standard_normal((1, a.heads, a.head_dim)).astype(np.float32))
    out = gpu.buffer(a.heads * a.head_dim * 4)

    def call() -> None:  # one decode query through every layer's cache, as a decode step does
        for layer in range(a.layers):
            cache.attend(layer, q, out, a.context - 1, 1, a.heads)

    call()  # warm-up: compile, bind groups, host pages filled
    gpu.wait()
    t0 = time.perf_counter()
    for _ in range(a.repeats):
        call()
    gpu.wait()
    dt = (time.perf_counter() - t0) / a.repeats / a.layers
    kv_bytes = cache.bytes_per_position() * a.context
    streamed_bytes = cache.streamed_windows * cache.slot_bytes / (a.repeats + 1) / a.layers
    digest = hashlib.sha256(gpu.read(out)).hexdigest()
    gpu.forget_bindings()  # cached bind groups hold this cache's buffers: free them before the next case
    shown = f"{variant}{attention.BLOCK}" if cache._windows.driver(a.heads).variant == "blocks" else variant
    return {"kind": "attention", "mode": mode, "variant": shown, "block": attention.BLOCK, "window": window,
            "windows": placement if placement == "resident" else f"{placement} {a.budget_frac:g}",
            "out_sha256": digest,
            "slot_bytes": cache.slot_bytes, "streamed_bytes_per_call": streamed_bytes,
            "context": a.context, "seconds_per_call": dt, "cache_GBps": kv_bytes / dt / 1e9,
            "bytes_per_position": cache.bytes_per_position(), "residual_bytes": cache.residual_bytes(),
            "bits_per_element": MODES[mode].bits_per_element(a.head_dim)}


def bench_write_buffer(gpu: Gpu, a: argparse.Namespace, chunk: int) -> dict:
    """queue.write_buffer of `chunk`-byte pieces into one destination."""
    total = a.upload_mb << 20
    data = np.random.default_rng(1).integers(0, 2**32, total // 4, dtype=np.uint32)
    dst = gpu.buffer(total)
    gpu.queue.write_buffer(dst, 0, data[: chunk // 4])
    gpu.wait()
    t0 = time.perf_counter()
    for off in range(0, total, chunk):
        gpu.queue.write_buffer(dst, off, data[off // 4: (off + chunk) // 4])
    gpu.wait()
    dt = time.perf_counter() - t0
    return {"kind": "upload", "path": f"write_buffer {chunk >> 10} KiB", "bytes": total, "GBps": total / dt / 1e9}


def bench_mapped_ring(gpu: Gpu, a: argparse.Namespace, chunk: int) -> dict:
    """A ring of MAP_WRITE staging buffers: map, fill, unmap, copy to the destination on the GPU."""
    import wgpu

    total = a.upload_mb << 20
    data = np.random.default_rng(1).integers(0, 2**32, total // 4, dtype=np.uint32)
    dst = gpu.buffer(total)
    usage = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC
    ring = [gpu.device.create_buffer(size=chunk, usage=usage, mapped_at_creation=True) for _ in range(a.ring)]
    mapped = [True] * a.ring
    gpu.wait()
    t0 = time.perf_counter()
    for i, off in enumerate(range(0, total, chunk)):
        j = i % a.ring
        if not mapped[j]:
            ring[j].map_sync(wgpu.MapMode.WRITE)  # waits for the copy that last used this slot
        ring[j].write_mapped(data[off // 4: (off + chunk) // 4])
        ring[j].unmap()
        mapped[j] = False
        enc = gpu.device.create_command_encoder()
        enc.copy_buffer_to_buffer(ring[j], 0, dst, off, chunk)
        gpu.queue.submit([enc.finish()])
    gpu.wait()
    dt = time.perf_counter() - t0
    return {"kind": "upload", "path": f"mapped ring x{a.ring} {chunk >> 10} KiB", "bytes": total,
            "GBps": total / dt / 1e9}


def bench_write_staged(gpu: Gpu, a: argparse.Namespace, chunk: int, threads: int) -> dict:
    """Gpu.write_staged (threaded copies into a ring of mapped staging buffers) in `chunk`-byte pieces."""
    total = a.upload_mb << 20
    data = np.random.default_rng(1).integers(0, 2**32, total // 4, dtype=np.uint32)
    dst = gpu.buffer(total)
    gpu.write_staged(dst, data[: chunk // 4], threads=threads)
    gpu.wait()
    t0 = time.perf_counter()
    for off in range(0, total, chunk):
        gpu.write_staged(dst, data[off // 4: (off + chunk) // 4], off, threads=threads)
    gpu.wait()
    dt = time.perf_counter() - t0
    ok = np.array_equal(np.frombuffer(gpu.read(dst, 1 << 20, total - (1 << 20)), np.uint32), data[-(1 << 18):])
    return {"kind": "upload", "path": f"write_staged {threads}t {chunk >> 10} KiB", "bytes": total,
            "GBps": total / dt / 1e9, "verified": ok}


def bench_host_pages(gpu: Gpu, a: argparse.Namespace, chunk: int) -> list[dict]:
    """Streaming from host pages (`Gpu.host_page`: host RAM the GPU copies from), as the KV cache
    streams windows: pages filled once, then only GPU copies into VRAM, recorded in the open command
    encoder as attention records them (one submit per round). Two rounds over the same pages: a
    page's first copy also pays the driver's first GPU access to that host memory."""
    total = a.upload_mb << 20
    data = np.random.default_rng(1).integers(0, 2**32, total // 4, dtype=np.uint32)
    dst = gpu.buffer(total)
    gpu.write(dst, np.zeros(16, np.uint32), total - 64)  # the destination exists on the GPU before timing
    pages = []
    for off in range(0, total, chunk):
        pages.append(gpu.host_page(chunk))
        gpu.fill_page(pages[-1], data[off // 4: (off + chunk) // 4])
    rows = []
    for label in ("first copy", "again"):
        gpu.wait()
        t0 = time.perf_counter()
        for page, off in zip(pages, range(0, total, chunk), strict=True):
            gpu.stream(page, 0, dst, off, chunk)
        gpu.wait()
        dt = time.perf_counter() - t0
        ok = np.array_equal(np.frombuffer(gpu.read(dst, 1 << 20, total - (1 << 20)), np.uint32), data[-(1 << 18):])
        rows.append({"kind": "upload", "path": f"host pages {chunk >> 10} KiB, {label}", "bytes": total,
                     "GBps": total / dt / 1e9, "verified": ok})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--context", type=int, default=512, help="cached positions (query at context-1)")
    p.add_argument("--window", type=int, nargs="+", default=[128], help="positions per GPU window (each in turn)")
    p.add_argument("--heads", type=int, default=9)
    p.add_argument("--kv-heads", type=int, default=3)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--layers", type=int, default=1,
                   help="caches walked per call (a decode step's layers; more than the GPU's L2 cache holds)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated cache modes")
    p.add_argument("--upload-mb", type=int, default=32, help="bytes moved per upload path")
    p.add_argument("--chunk-kb", type=int, nargs="+", default=[64, 1024, 8192], help="upload piece sizes")
    p.add_argument("--ring", type=int, default=4, help="staging buffers in the mapped ring")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 4, 8], help="write_staged host threads")
    p.add_argument("--budget-frac", type=float, default=0.25, help="streamed: VRAM budget / cache size")
    p.add_argument("--label", default="", help="printed with the table (e.g. the code version)")
    p.add_argument("--variants", default="auto", help="comma-separated attention kernel variants")
    p.add_argument("--block", type=int, nargs="+", default=[attention.BLOCK],
                   help="positions per block of the blocks variant (each in turn)")
    p.add_argument("--placements", default="resident,streamed", help=f"comma-separated, of {', '.join(PLACEMENTS)}")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "kv_bench.json"))
    a = p.parse_args()
    gpu = Gpu.create()
    rows = []
    for window, block in [(w, b) for b in a.block for w in a.window]:
        attention.BLOCK = block  # read when a cache builds its Attention
        for variant in a.variants.split(","):
            for mode in a.modes.split(","):
                for placement in a.placements.split(","):
                    rows.append(bench_attention(gpu, a, mode, placement, variant, window))
    for kb in a.chunk_kb:
        chunk = min(kb << 10, a.upload_mb << 20)
        rows.append(bench_write_buffer(gpu, a, chunk))
        rows.append(bench_mapped_ring(gpu, a, chunk))
        if getattr(gpu, "has_host_pages", False):
            rows.extend(bench_host_pages(gpu, a, chunk))
        if hasattr(gpu, "write_staged"):
            for th in a.threads:
                rows.append(bench_write_staged(gpu, a, chunk, th))
    print(f"{a.label} device: {gpu.description}")
    print(f"attention: decode, {a.heads}/{a.kv_heads} heads, head_dim {a.head_dim}, context {a.context}, "
          f"{a.layers} layers per call, times per layer; "
          "MB from host = windows streamed per call; host GB/s = that / (time - resident time)")
    print(f"{'window':>6} {'variant':<8} {'mode':<8} {'windows':<18} {'ms/call':>9} {'cache GB/s':>10} {'B/pos/layer':>11} "
          f"{'bits/el':>7} {'vs resident':>11} {'vs f32':>7} {'MB from host':>12} {'host GB/s':>9} {'same bits':>9}")
    res = {(r["window"], r["variant"], r["mode"]): r["seconds_per_call"] for r in rows
           if r["kind"] == "attention" and r["windows"] == "resident"}
    bits = {(r["window"], r["variant"], r["mode"]): r["out_sha256"] for r in rows
            if r["kind"] == "attention" and r["windows"] == "resident"}
    for r in rows:
        if r["kind"] == "attention":
            base = res.get((r["window"], r["variant"], r["mode"]), float("nan"))
            rel = r["seconds_per_call"] / base
            f32 = r["seconds_per_call"] / res.get((r["window"], r["variant"], "f32"), float("nan"))
            extra = r["seconds_per_call"] - base
            rate = r["streamed_bytes_per_call"] / extra / 1e9 if r["streamed_bytes_per_call"] and extra > 0 else float("nan")
            same = bits.get((r["window"], r["variant"], r["mode"])) == r["out_sha256"]
            print(f"{r['window']:>6} {r['variant']:<8} {r['mode']:<8} {r['windows']:<18} {r['seconds_per_call'] * 1e3:>9.3f} "
                  f"{r['cache_GBps']:>10.3f} {r['bytes_per_position']:>11} {r['bits_per_element']:>7.2f} {rel:>11.2f} "
                  f"{f32:>7.2f} {r['streamed_bytes_per_call'] / 1e6:>12.1f} {rate:>9.2f} {str(same):>9}")
    print(f"upload: {a.upload_mb} MiB per path")
    print(f"{'path':<36} {'GB/s':>8} {'verified':>8}")
    for r in rows:
        if r["kind"] == "upload":
            print(f"{r['path']:<36} {r['GBps']:>8.2f} {str(r.get('verified', '')):>8}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": gpu.description, "args": vars(a), "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
