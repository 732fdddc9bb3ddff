"""The Q1_0 decode product on Bonsai's matrix shapes beside a plain copy kernel's bandwidth, in one process.

Each matrix is uploaded in enough copies to pass 256 MiB (so the card's L2 cache cannot serve a repeat), and
the copies' one-token products are recorded round after round into one pass: GPU time from the submit to idle,
net of an empty round trip, per product. Variants: the lanes-per-row kernel every other type uses
(`lanes`), the SPREAD kernel with the runtime's rows per workgroup (`table`, matmul.Q1_ROWS) and with R
(`rows=R`). The copy kernel's figure counts the bytes
read and written; a product's counts the weight bytes it reads. Prints a markdown table and writes JSON.

    python bench/probes/q1_probe.py [--shapes 8B,1.7B] [--rows 4,8,16,32] [--rounds 5] [--out q1_probe.json]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: bonsai_gguf and the shared modules

import numpy as np  # noqa: E402
from bonsai_gguf import REAL_VOCAB, q1_matrix  # noqa: E402
from bonsai_gguf import SHAPES as MODEL_SHAPES  # noqa: E402
from results_file import write_results  # noqa: E402
from wgsl_file import load_kernel  # noqa: E402

from bonsai.gpu.device import Gpu  # noqa: E402
from bonsai.gpu.limits import grid, workgroups  # noqa: E402
from bonsai.ops import matmul as mm  # noqa: E402
from bonsai.ops.qtypes import QTYPES  # noqa: E402

Q1 = QTYPES["Q1_0"]
RUNTIME_ROWS = list(mm.Q1_ROWS)  # the runtime's table (variant `table`)
SPAN = 256 << 20  # bytes of copies per shape: well past an H100's (50 MiB) or H200's L2


def shapes(name: str) -> list[tuple[str, int, int]]:
    """(matrix, rows, cols) of one layer of a model shape, gate/up as one interleaved matrix, and its output head."""
    s = MODEL_SHAPES[name]
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    return [(f"{name} qkv", q + 2 * kv, s.dim), (f"{name} wo", s.dim, q), (f"{name} gate_up", 2 * s.ffn, s.dim),
            (f"{name} down", s.dim, s.ffn), (f"{name} head", REAL_VOCAB, s.dim)]


def gpu_seconds(gpu: Gpu, record, n: int) -> float:
    """GPU seconds per call of `record(i)` for i < n recorded in one pass, from the submit to idle, net of an
    empty submit's round trip."""
    gpu.wait()
    t0 = time.perf_counter()
    gpu.flush()
    gpu.wait()
    empty = time.perf_counter() - t0
    for i in range(n):
        record(i)
    gpu.flush()
    t0 = time.perf_counter()
    gpu.wait()
    return max(time.perf_counter() - t0 - empty, 0.0) / n


def copy_bandwidth(gpu: Gpu, nbytes: int, rounds: int) -> float:
    """Bytes read + written per second by copy_probe.wgsl over a buffer of nbytes (best of three)."""
    kernel = load_kernel(gpu, "probes/copy_probe.wgsl", WG=256)
    src, dst = gpu.buffer(nbytes), gpu.buffer(nbytes)
    groups = grid(workgroups(nbytes // 16, 256))
    best = min(gpu_seconds(gpu, lambda i: gpu.dispatch(kernel, [src, dst], groups), rounds) for _ in range(3))
    return 2 * nbytes / best


def product_rows(gpu: Gpu, name: str, rows: int, cols: int, variants: list[str], rounds: int) -> list[dict]:
    rng = np.random.default_rng(rows * 7 + cols)
    raw = q1_matrix(rng, rows, cols)
    copies = max(1, -(-SPAN // raw.nbytes))
    bufs = [mm.upload_matrix(gpu, raw, Q1, rows, cols, texture=False).buf for _ in range(copies)]
    x = gpu.upload(rng.standard_normal(cols).astype(np.float32))
    y = gpu.buffer(rows * 4)
    out, first = [], None
    for v in variants:
        mm.Q1_SPREAD = v != "lanes"
        mm.Q1_ROWS = [(0, int(v.split("=")[1]))] if v.startswith("rows=") else RUNTIME_ROWS
        ms = [mm.QMatrix(b, Q1, rows, cols, name) for b in bufs]  # fresh: lanes are cached per matrix
        prm = gpu.upload(ms[0].params(1, cols, rows))
        mm.dispatch(gpu, ms[0], x, y, prm, 1)  # compile
        got = np.frombuffer(gpu.read(y, rows * 4), np.float32).copy()
        first = got if first is None else first
        s = min(gpu_seconds(gpu, lambda i, ms=ms, prm=prm: mm.dispatch(gpu, ms[i % copies], x, y, prm, 1),
                            copies * rounds) for _ in range(2))
        out.append({"matrix": name, "rows": rows, "cols": cols, "variant": v, "us": s * 1e6,
                    "rows_per_group": mm.q1_rows(rows) if mm.Q1_SPREAD else None,
                    "weight_gb_s": raw.nbytes / s / 1e9, "copies": copies,
                    "max_diff_vs_first": float(np.max(np.abs(got - first)) / max(np.max(np.abs(first)), 1e-30))})
    mm.Q1_SPREAD, mm.Q1_ROWS = True, RUNTIME_ROWS
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="8B,1.7B")
    p.add_argument("--rows", default="4,8,16,32", help="SPREAD rows per workgroup to time")
    p.add_argument("--rounds", type=int, default=5, help="rounds over the copies per timing")
    p.add_argument("--out", default="bench/results/q1_probe.json")
    a = p.parse_args()
    gpu = Gpu.create()
    copy = copy_bandwidth(gpu, SPAN, 20)
    variants = ["lanes", "table"] + [f"rows={r}" for r in a.rows.split(",")]
    rows = []
    for shape in a.shapes.split(","):
        for name, r, c in shapes(shape):
            rows += product_rows(gpu, name, r, c, variants, a.rounds)
    print(f"{gpu.description}: copy kernel {copy / 1e9:.0f} GB/s (read + write, {SPAN >> 20} MiB)")
    print("| matrix | rows x cols | variant | us | weight GB/s | of copy | rel. diff |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        v = r["variant"] + (f" ({r['rows_per_group']} rows)" if r["variant"] == "table" else "")
        print(f"| {r['matrix']} | {r['rows']} x {r['cols']} | {v} | {r['us']:.1f} | "
              f"{r['weight_gb_s']:.0f} | {r['weight_gb_s'] * 1e9 / copy:.0%} | {r['max_diff_vs_first']:.1e} |")
    write_results(a.out, {"host": platform.node(), "device": gpu.description, "copy_gb_s": copy / 1e9,
                          "rows": rows})


if __name__ == "__main__":
    main()
