"""The FMA rate WGSL reaches on this adapter, in several forms of the same work (bench/probes/fma_probe.wgsl): scalar
fma() chains (roofline_probe's form), `a * m + c`, rounds written out, vec4 chains; each at several workgroup
sizes, as `--reps` dispatches in one pass. Tells whether roofline_probe's "FMA peak" is the hardware's or the form's.

Prints a table (us per dispatch, TFLOP/s) and writes JSON.
    python bench/probes/fma_probe.py [--iters 1024] [--reps 20] [--sizes 64,128,256]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402

from results_file import write_results  # noqa: E402
from roofline_probe import timed  # noqa: E402

from bonsai.gpu.backend import Kernel  # noqa: E402
from bonsai.gpu.device import Gpu  # noqa: E402
from bonsai.gpu.shaders import render  # noqa: E402

ENTRIES = ("chains8", "muladd8", "unrolled8", "vec4x8")
CHAINS = 8  # scalar FMAs per round per invocation in every entry (vec4x8: 32 a round, ITERS / 4 rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=1024, help="rounds of eight FMAs per invocation")
    ap.add_argument("--reps", type=int, default=20, help="dispatches per timing")
    ap.add_argument("--sizes", default="64,128,256", help="workgroup sizes")
    ap.add_argument("--waves", type=int, default=32, help="workgroups = 132 x this x 256 / size (fewer on a CPU)")
    ap.add_argument("--out", default="bench/results/fma_probe.json")
    a = ap.parse_args()
    gpu = Gpu.create()
    source = (Path(__file__).parent / "fma_probe.wgsl").read_text()
    rows = []
    print(f"adapter: {gpu.description}")
    print("| form | workgroup | workgroups | us / dispatch | TFLOP/s |\n| --- | ---: | ---: | ---: | ---: |")
    for size in (int(s) for s in a.sizes.split(",")):
        code = render(source, {"WG": size, "ITERS": a.iters}, name="fma_probe.wgsl")
        module = gpu.device.create_shader_module(label="fma_probe.wgsl", code=code)
        groups = 132 * a.waves * 256 // size if not gpu.is_cpu else 4
        for entry in ENTRIES:
            pipeline = gpu.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": entry})
            kernel = Kernel(f"fma_probe {entry}", pipeline)
            buf = gpu.buffer(4 * 132 * a.waves * 256)  # one per pipeline: an "auto" layout binds to its pipeline only
            s = timed(gpu, lambda k=kernel, b=buf, n=groups: gpu.dispatch(k, [b], (n,)), a.reps)
            flops = 2 * CHAINS * a.iters * size * groups
            rows.append({"form": entry, "workgroup": size, "groups": groups, "us": s * 1e6, "tflop_s": flops / s / 1e12})
            r = rows[-1]
            print(f"| {entry} | {size} | {groups} | {r['us']:.1f} | {r['tflop_s']:.2f} |")
    write_results(a.out, {"adapter": gpu.description, "iters": a.iters, "reps": a.reps, "rows": rows})


if __name__ == "__main__":
    main()
