"""Whether wgpu's experimental cooperative matrices (`cooperative-matrix`: 8x8 f32, tensor cores on NVIDIA) help
the prompt's matmuls: does coopmat_probe.wgsl compile on this adapter, how far are its products from float64
(against numpy's f32 and the 2^-24 bound the tiled kernel's tests hold), how fast on the default model's shapes.

Prints a table and writes JSON; on an adapter without the feature it says so and writes that.
    python bench/coopmat_probe.py [--reps 50] [--out bench/results/coopmat_probe.json]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import wgpu
from results_file import write_results

# (name, tokens M, rows N, cols K) of a 512-token prompt step's products in SmolLM2-135M
SHAPES = [("gate_up", 512, 3072, 576), ("qkv", 512, 960, 576), ("down", 512, 576, 1536)]
BLOCK = 16  # C rows and columns per workgroup (coopmat_probe.wgsl)


def product_row(dev, pipeline, name: str, m: int, n: int, k: int, reps: int, rng: np.random.Generator) -> dict:
    """One shape: the products' worst error over sum |a b| (coop and numpy f32) and the dispatch's time."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 0.02).astype(np.float32)
    usage = wgpu.BufferUsage
    bufs = [dev.create_buffer_with_data(data=a.tobytes(), usage=usage.STORAGE),
            dev.create_buffer_with_data(data=b.tobytes(), usage=usage.STORAGE),
            dev.create_buffer(size=m * n * 4, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST),
            dev.create_buffer_with_data(data=np.array([m, n, k, 0], np.uint32).tobytes(), usage=usage.STORAGE)]
    group = dev.create_bind_group(layout=pipeline.get_bind_group_layout(0),
                                  entries=[{"binding": i, "resource": {"buffer": buf}} for i, buf in enumerate(bufs)])

    def run(count: int) -> None:  # `count` dispatches in one pass, then a small read waits for them
        enc = dev.create_command_encoder()
        cpass = enc.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        for _ in range(count):
            cpass.dispatch_workgroups(n // BLOCK, m // BLOCK)
        cpass.end()
        dev.queue.submit([enc.finish()])
        dev.queue.read_buffer(bufs[3])

    run(1)  # C starts at zero: one dispatch leaves A B
    got = np.frombuffer(dev.queue.read_buffer(bufs[2]), np.float32).reshape(m, n).astype(np.float64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        run(reps)
        best = min(best, (time.perf_counter() - t0) / reps)
    return {"shape": f"{name} {m}x{n}x{k}", "err_coop": float(np.max(np.abs(got - want) / scale)),
            "err_numpy_f32": float(np.max(np.abs((a @ b) - want) / scale)), "us": best * 1e6,
            "tflop_s": 2 * m * n * k / best / 1e12}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=50, help="dispatches per timing")
    ap.add_argument("--out", default="bench/results/coopmat_probe.json")
    a = ap.parse_args()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    name = adapter.info["device"]
    if "cooperative-matrix" not in adapter.features:
        print(f"{name}: no cooperative-matrix feature")
        write_results(a.out, {"adapter": name, "feature": False, "rows": []})
        return
    dev = adapter.request_device_sync(required_features=["cooperative-matrix"])
    try:
        module = dev.create_shader_module(code=(Path(__file__).parent / "coopmat_probe.wgsl").read_text())
        pipeline = dev.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    except Exception as exc:  # wgpu's errors for an unsupported shader vary by version: report whichever came
        print(f"{name}: coopmat_probe.wgsl did not compile: {str(exc)[:2000]}")
        write_results(a.out, {"adapter": name, "feature": True, "compiled": False, "error": str(exc)[:2000]})
        return
    rng = np.random.default_rng(0)
    rows = [product_row(dev, pipeline, *shape, a.reps, rng) for shape in SHAPES]
    print(f"adapter: {name}; error = max |C - float64| / sum |a b| (the tiled kernel's tests: K x 2^-24)")
    print("| shape | error, coop | error, numpy f32 | us / dispatch | TFLOP/s |\n| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['shape']} | {r['err_coop']:.3e} | {r['err_numpy_f32']:.3e} | {r['us']:.1f} | {r['tflop_s']:.2f} |")
    write_results(a.out, {"adapter": name, "feature": True, "compiled": True, "reps": a.reps, "rows": rows})


if __name__ == "__main__":
    main()
