"""What the decode step's output head costs on the GPU: RMSNorm fused into it against a norm dispatch before it,
by lanes per row, and the argmax after it.

Random Q8_0 weights of the default model's head (49,152 x 576). Each case is `--reps` dispatches (or pairs) in
one compute pass, a barrier before each, timed from the submit to idle (the pass's encoding on the CPU, at the
flush, is timed apart), best of 3, net of an empty submit's round trip. The logits' bits of each case are compared
with the fused one's: equal at the same lanes (the fused norm is the norm kernel's arithmetic); other lanes sum a
row's chunks in another order. Prints a table and
writes JSON.

    python bench/head_probe.py [--reps 200] [--rows 49152] [--cols 576]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
from results_file import write_results

from bonsai.gpu.device import Gpu
from bonsai.ops import argmax, rmsnorm
from bonsai.ops import matmul as mm
from bonsai.ops.qtypes import qtype

EPS = 1e-5


def random_q8_0(rows: int, cols: int, rng: np.random.Generator) -> bytes:
    """Valid Q8_0 rows: per 32 weights an f16 scale, then 32 signed bytes."""
    blocks = rows * cols // 32
    d = (rng.standard_normal((blocks, 1)) * 0.01).astype(np.float16).view(np.uint8)
    q = rng.integers(0, 256, (blocks, 32), dtype=np.uint8)
    return np.concatenate([d, q], axis=1).tobytes()


def gpu_seconds(gpu: Gpu, record, reps: int) -> tuple[float, float]:
    """(s per call to encode and submit, GPU s per call) of `record()` called `reps` times in one pass, best of 3."""
    record()
    gpu.wait()
    t0 = time.perf_counter()
    gpu.flush()
    t1 = time.perf_counter()
    gpu.wait()
    empty = time.perf_counter() - t1
    best = (float("inf"), float("inf"))
    for _ in range(3):
        for _ in range(reps):
            record()
        t0 = time.perf_counter()
        gpu.flush()
        t1 = time.perf_counter()
        gpu.wait()
        gpu_s = time.perf_counter() - t1 - empty
        best = min(best, (gpu_s, t1 - t0))
    return best[1] / reps, best[0] / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rows", type=int, default=49152)
    ap.add_argument("--cols", type=int, default=576)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "head_probe.json"))
    a = ap.parse_args()
    gpu = Gpu.create()
    rng = np.random.default_rng(0)
    rows, cols = a.rows, a.cols
    head = mm.upload_matrix(gpu, random_q8_0(rows, cols, rng), qtype("Q8_0"), rows, cols, "output", texture=False)
    norm = gpu.upload(rng.uniform(0.5, 1.5, cols).astype(np.float32).tobytes())
    x = gpu.upload((rng.standard_normal(cols)).astype(np.float32).tobytes())
    xn, logits, token, hist = gpu.buffer(4 * cols), gpu.buffer(4 * rows), gpu.buffer(8), gpu.buffer(16)
    fused_prm = gpu.upload(head.params(1, cols, rows, eps=EPS))
    plain_prm = gpu.upload(head.params(1, cols, rows))
    norm_prm = gpu.upload(rmsnorm.params(1, cols, cols, cols, EPS))
    arg_prm = gpu.upload(argmax.params(rows, 0))

    def fused() -> None:
        mm.dispatch(gpu, head, x, logits, fused_prm, 1, x_words=cols, norm=norm)

    def apart(m: mm.QMatrix):
        def record() -> None:
            rmsnorm.dispatch(gpu, x, norm, xn, norm_prm, 1)
            mm.dispatch(gpu, m, xn, logits, plain_prm, 1)
        return record

    def bits(record) -> bytes:
        gpu.write(logits, bytes(4 * rows))
        record()
        return gpu.read(logits)

    want = bits(fused)
    cases = [(f"norm fused, {head.decode_lanes} lanes a row", fused)]
    for lanes in (1, 2, 4, 8, 16):
        mm.TALL_LANES = lanes
        m = dataclasses.replace(head)  # its lanes worked out afresh
        cases.append((f"norm dispatch, then {m.decode_lanes} lanes a row", apart(m)))
    cases.append(("argmax (after the head)", lambda: argmax.dispatch(gpu, logits, token, arg_prm, hist)))
    rows_out = []
    for name, record in cases:
        same = name.startswith("argmax") or bits(record) == want
        encode_s, gpu_s = gpu_seconds(gpu, record, a.reps)
        rows_out.append({"case": name, "gpu_us": gpu_s * 1e6, "encode_us": encode_s * 1e6, "same_bits": same})
    print(f"adapter: {gpu.adapter.info.get('device', '?')}; head {rows} x {cols} Q8_0")
    print("| case | GPU us | encode us | logits' bits against the fused head's |\n| --- | ---: | ---: | --- |")
    for r in rows_out:
        print(f"| {r['case']} | {r['gpu_us']:.2f} | {r['encode_us']:.2f} | {'equal' if r['same_bits'] else 'DIFFERENT'} |")
    write_results(a.out, {"rows": rows_out})


if __name__ == "__main__":
    main()
