"""How far the matmul kernels are from what this adapter can do: a WGSL kernel of independent FMA chains
(the adapter's arithmetic peak as WGSL reaches it) beside the engine's matmul kernels on random Q4_1
weights of the default model's shapes, each timed as `--reps` dispatches in one compute pass.

On a CPU adapter (lavapipe) it also times the CPU kernel (`matmul_cpu.wgsl` main4) with its weights
not fetched (each chunk's weights made from the row and chunk numbers: only x's texel fetches and the
FMAs left), the most that kernel's structure can give, per CPU second as well as per wall second.

Prints a table (us per dispatch, GFLOP/s, fraction of the FMA peak) and writes JSON.
    python bench/roofline_probe.py [--tokens 512] [--reps 50] [--tiles 64x64x4,64x64x8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from results_file import write_results
from wgsl_file import load_kernel

from bonsai.gpu import shaders
from bonsai.gpu.backend import Kernel
from bonsai.gpu.device import Gpu
from bonsai.ops import matmul as mm
from bonsai.ops import tiled
from bonsai.ops.qtypes import qtype

CHAINS, ITERS, WG = 8, 1024, 256  # roofline_probe.wgsl: FMA chains (fixed there), steps, invocations
# (name, rows, cols) of one layer's matmuls in SmolLM2-135M (gate/up interleaved in one matrix)
SHAPES = [("qkv", 960, 576), ("wo", 576, 576), ("gate_up", 3072, 576), ("down", 576, 1536)]


def timed(gpu: Gpu, record, reps: int) -> float:
    """Seconds per call of `record()` (`reps` of them in one pass), net of an empty round trip."""
    record()
    gpu.wait()
    t0 = time.perf_counter()
    gpu.wait()
    empty = time.perf_counter() - t0
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            record()
        gpu.wait()
        best = min(best, time.perf_counter() - t0 - empty)
    return best / reps


def fma_peak(gpu: Gpu, groups: int, reps: int) -> dict:
    kernel = load_kernel(gpu, "roofline_probe.wgsl", WG=WG, ITERS=ITERS)
    buf = gpu.buffer(4 * WG * groups)
    gpu.dispatch(kernel, [buf], (groups,))  # a CPU driver compiles the kernel at its first dispatch
    gpu.wait()
    c0 = time.process_time()
    s = timed(gpu, lambda: gpu.dispatch(kernel, [buf], (groups,)), reps)
    cpu_s = (time.process_time() - c0) / (1 + 3 * reps)  # on a CPU adapter its threads are this process's
    flops = 2 * CHAINS * ITERS * WG * groups
    return {"kernel": f"FMA chains ({groups} x {WG} invocations)", "us": s * 1e6, "gflop_s": flops / s / 1e9,
            "gflop_per_cpu_s": flops / cpu_s / 1e9}


def random_q4_1(rows: int, cols: int, rng: np.random.Generator) -> bytes:
    """Valid Q4_1 rows: per 32 weights an f16 scale and min, then 16 bytes of nibbles."""
    blocks = rows * cols // 32
    dm = (rng.standard_normal((blocks, 2)) * 0.02).astype(np.float16).view(np.uint8)
    q = rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
    return np.concatenate([dm, q], axis=1).tobytes()


def matmul_rows(gpu: Gpu, tokens: int, reps: int, tiles: list[str]) -> list[dict]:
    rng = np.random.default_rng(0)
    rows_out = []
    for name, rows, cols in SHAPES:
        m = mm.upload_matrix(gpu, random_q4_1(rows, cols, rng), qtype("Q4_1"), rows, cols, name)
        x = gpu.buffer(4 * tokens * cols)
        gpu.write(x, rng.standard_normal(tokens * cols).astype(np.float32).tobytes())
        y = gpu.buffer(4 * tokens * rows)
        prm = gpu.buffer(48)
        gpu.write(prm, m.params(tokens, cols, rows))
        flops = 2 * rows * cols * tokens
        variants = [("matvec", None)] + [(f"tiled {t}", t) for t in tiles] if not gpu.is_cpu else [("cpu", None)]
        for label, tile in variants:
            saved = tiled.MIN_TOKENS, tiled.TILE
            if tile is not None:
                tiled.MIN_TOKENS, tiled.TILE = 1, tiled.Tile.parse(tile)
            try:
                s = timed(gpu, lambda m=m, x=x, y=y, prm=prm: mm.dispatch(gpu, m, x, y, prm, tokens), reps)
            finally:
                tiled.MIN_TOKENS, tiled.TILE = saved
            rows_out.append({"kernel": f"{name} {rows}x{cols}, {tokens} tokens, {label}", "us": s * 1e6,
                             "gflop_s": flops / s / 1e9})
    return rows_out


# matmul_cpu.wgsl's chunk8 with no weight fetch and no decoding (the CPU bound below)
CHUNK8 = "fn chunk8(r: u32, c: u32) -> W8 {\n"
NO_FETCH = CHUNK8 + ("    let v = bitcast<vec4<f32>>(vec4<u32>(r, c, r ^ c, r + c));\n"
                     "    return W8(v, v * 2.0, v * 3.0, v * 4.0, v * 5.0, v * 6.0, v * 7.0, v * 8.0);\n")


def cpu_bound_rows(gpu: Gpu, tokens: int, reps: int) -> list[dict]:
    """The CPU kernel on gate/up as is and without its weight fetches, GFLOP/s per wall and per CPU second."""
    rng = np.random.default_rng(0)
    _, rows, cols = SHAPES[2]
    m = mm.upload_matrix(gpu, random_q4_1(rows, cols, rng), qtype("Q4_1"), rows, cols, "gate_up")
    x = gpu.buffer(4 * tokens * cols)
    gpu.write(x, rng.standard_normal(tokens * cols).astype(np.float32).tobytes())
    y = gpu.buffer(4 * tokens * rows)
    prm = gpu.buffer(48)
    gpu.write(prm, m.params(tokens, cols, rows))
    consts = dict(QTYPE=m.qtype.ggml_id, VT=mm.PLANAR_TEXELS["Q4_1"], BLK=32, R=mm.CPU_ROWS, TT=4, ACCUM=False, OUT=0)
    source = shaders.render(shaders.load_source("bonsai.ops", "matmul_cpu.wgsl"), consts, name="matmul_cpu.wgsl")
    if CHUNK8 not in source:
        raise SystemExit("matmul_cpu.wgsl has no chunk8 to replace: update roofline_probe.NO_FETCH")
    no_fetch = Kernel("no weight fetch", gpu._compile("matmul_cpu.wgsl (no weight fetch)", source.replace(CHUNK8, NO_FETCH, 1), "main4"))
    x_tex = mm._texture_of(gpu, x, 4 * tokens * cols)
    groups = (mm.workgroups(-(-rows // mm.CPU_ROWS), 64), -(-tokens // 4))
    spare = mm.spare_buffers(gpu)[:2]
    flops = 2 * rows * cols * tokens
    out = []
    for label, record in (
        ("as is", lambda: mm.dispatch(gpu, m, x, y, prm, tokens)),
        ("weights not fetched", lambda: gpu.dispatch(no_fetch, [m.tex, x_tex, y, prm, *spare], groups)),
    ):
        record()
        gpu.wait()
        c0 = time.process_time()
        s = timed(gpu, record, reps)
        cpu_s = (time.process_time() - c0) / (1 + 3 * reps)  # timed: one warm-up call, then 3 x reps
        out.append({"kernel": f"cpu gate_up {rows}x{cols}, {tokens} tokens, {label}", "us": s * 1e6,
                    "gflop_s": flops / s / 1e9, "gflop_per_cpu_s": flops / cpu_s / 1e9})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=None, help="tokens per matmul (default 512 on a GPU, 64 on a CPU)")
    ap.add_argument("--reps", type=int, default=None, help="dispatches per timing (default 50 on a GPU, 3 on a CPU)")
    ap.add_argument("--tiles", default="64x64x4,64x64x8,32x32x4", help="tiled kernel shapes BMxBNxTM")
    ap.add_argument("--out", default="bench/results/roofline_probe.json")
    a = ap.parse_args()
    gpu = Gpu.create()
    cpu = gpu.is_cpu
    tokens = a.tokens or (64 if cpu else 512)
    reps = a.reps or (3 if cpu else 50)
    rows = [fma_peak(gpu, 64 if cpu else 132 * 32, reps)]
    rows += matmul_rows(gpu, tokens, reps, [t for t in a.tiles.split(",") if t])
    if cpu:
        rows += cpu_bound_rows(gpu, tokens, reps)
    peak = rows[0]["gflop_s"]
    print(f"adapter: {gpu.description}")
    print("| kernel | us / dispatch | GFLOP/s | / FMA peak | GFLOP per CPU s |\n| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        r["of_peak"] = r["gflop_s"] / peak
        per_cpu = f"{r['gflop_per_cpu_s']:.1f}" if "gflop_per_cpu_s" in r else ""
        print(f"| {r['kernel']} | {r['us']:.1f} | {r['gflop_s']:.1f} | {r['of_peak']:.3f} | {per_cpu} |")
    write_results(a.out, {"adapter": gpu.description, "tokens": tokens, "reps": reps, "rows": rows})


if __name__ == "__main__":
    main()
