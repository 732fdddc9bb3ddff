"""Where do mappable buffers live, and how fast does the GPU copy from them? (plain wgpu-py)

For each kind of buffer the KV master's host pages could be, allocates `--gib` GiB of them, fills
them from the host, and reports: VRAM used (nvidia-smi delta; 'n/a' without it), host RAM taken
(MemAvailable delta), the host fill rate, and the GPU's copy rate into a device buffer in pieces of
each size, bits verified. Kinds:
  map-write  MAP_WRITE | COPY_SRC (WebGPU's upload buffer; gpu-allocator's CpuToGpu: prefers VRAM
             that the host can see through the BAR when the card exposes it)
  map-read   MAP_READ | COPY_SRC (needs the native feature mappable-primary-buffers; GpuToCpu:
             host-cached system RAM), filled through its mapped range
  device     STORAGE | COPY_SRC | COPY_DST, filled with queue.write_buffer (the control: VRAM)
Prints a table and writes bench/results/host_page_probe.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import wgpu


def vram_used_mib() -> float | None:
    if not shutil.which("nvidia-smi"):
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=False).stdout.split()
    return float(out[0]) if out else None


def mem_available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait(device) -> None:
    sync = device.create_buffer(size=16, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
    device.queue.read_buffer(sync, 0, 4)


def make_pages(device, kind: str, n: int, size: int) -> list:
    U = wgpu.BufferUsage
    usage = {"map-write": U.MAP_WRITE | U.COPY_SRC, "map-read": U.MAP_READ | U.COPY_SRC,
             "device": U.STORAGE | U.COPY_SRC | U.COPY_DST}[kind]
    return [device.create_buffer(size=size, usage=usage) for _ in range(n)]


def fill(device, kind: str, page, data: np.ndarray) -> None:
    if kind == "device":
        device.queue.write_buffer(page, 0, data)
        return
    page.map_sync(wgpu.MapMode.WRITE if kind == "map-write" else wgpu.MapMode.READ)
    dst = np.frombuffer(page._experimental_get_mapped_range(0, data.nbytes), np.uint8)
    np.copyto(dst, data.view(np.uint8))
    del dst
    page.unmap()


def probe(device, kind: str, a: argparse.Namespace) -> dict:
    size = max(a.piece_mib) << 20
    n = (a.gib << 30) // size
    rng = np.random.default_rng(0)
    data = rng.integers(0, 2**32, size // 4, dtype=np.uint32)
    vram0, host0 = vram_used_mib(), mem_available_mib()
    pages = make_pages(device, kind, n, size)
    t0 = time.perf_counter()
    for i, page in enumerate(pages):
        data[0] = i
        fill(device, kind, page, data)
    wait(device)
    fill_s = time.perf_counter() - t0
    vram1, host1 = vram_used_mib(), mem_available_mib()
    row = {"kind": kind, "bytes": n * size, "fill_GBps": n * size / fill_s / 1e9,
           "vram_delta_mib": None if vram0 is None or vram1 is None else vram1 - vram0,
           "host_delta_mib": host0 - host1, "copy_GBps": {}}
    dst = device.create_buffer(size=size, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST |
                               wgpu.BufferUsage.COPY_SRC)
    for piece_mib in a.piece_mib:
        piece = piece_mib << 20
        wait(device)
        t0 = time.perf_counter()
        moved = 0
        for _ in range(a.rounds):
            for page in pages:
                for off in range(0, size, piece):
                    enc = device.create_command_encoder()
                    enc.copy_buffer_to_buffer(page, off, dst, off, piece)
                    device.queue.submit([enc.finish()])
                    moved += piece
        wait(device)
        row["copy_GBps"][piece_mib] = moved / (time.perf_counter() - t0) / 1e9
    got = np.frombuffer(device.queue.read_buffer(dst, 0, size), np.uint32)
    data[0] = len(pages) - 1
    row["verified"] = bool(np.array_equal(got, data))
    for page in pages:
        page.destroy()
    dst.destroy()
    wait(device)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=int, default=4, help="GiB of pages per kind")
    p.add_argument("--piece-mib", type=int, nargs="+", default=[4, 16, 64], help="copy piece sizes")
    p.add_argument("--rounds", type=int, default=1, help="times every page is copied per piece size")
    p.add_argument("--kinds", default="map-write,map-read,device")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "host_page_probe.json"))
    a = p.parse_args()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync(required_features=["mappable-primary-buffers"])
    rows = [probe(device, kind, a) for kind in a.kinds.split(",")]
    print(f"device: {adapter.info['device']} ({adapter.info['backend_type']}); {a.gib} GiB of pages per kind")
    print(f"{'kind':<10} {'VRAM +MiB':>10} {'host RAM +MiB':>13} {'fill GB/s':>9} " +
          " ".join(f"{f'copy {m} MiB':>12}" for m in a.piece_mib) + f" {'verified':>8}")
    for r in rows:
        vram = "n/a" if r["vram_delta_mib"] is None else f"{r['vram_delta_mib']:.0f}"
        print(f"{r['kind']:<10} {vram:>10} {r['host_delta_mib']:>13.0f} {r['fill_GBps']:>9.2f} " +
              " ".join(f"{r['copy_GBps'][m]:>12.2f}" for m in a.piece_mib) + f" {str(r['verified']):>8}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": adapter.info["device"], "args": vars(a), "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
