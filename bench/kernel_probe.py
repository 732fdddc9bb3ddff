"""Where a decode (or prefill) step's GPU time goes: each distinct dispatch of a step, repeated in one pass.

Prefills a context, decodes a few greedy steps on the GPU-resident loop so the step is taped, then for
every distinct (kernel, bindings, workgroups) of the tape records it `--reps` times into one compute
pass and times submit-to-idle: the GPU microseconds per dispatch of that kind, barriers included (the CPU
time wgpu-core takes to encode the pass when it is finished, before the submit, is timed apart, not
counted in the GPU figure). The
whole tape replayed `--reps` times gives the step's own GPU time, and the Python time to replay it.
With --prefill T the step is a T-token prefill batch at position 0 instead (--old-prefill: with the old
matvec rather than the tiled matmul). Prints a table and writes JSON.

    python bench/kernel_probe.py [--model PATH] [--context 1024] [--kv f32] [--reps 200] [--prefill 512]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import Counter
from pathlib import Path

from bonsai.engine.native import load_engine
from bonsai.kv.attention import driver
from bonsai.kv.format.modes import MODES
from bonsai.ops import tiled

PROMPT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
          "combined movable metal type, oil-based ink and a wooden screw press. ")


def _names(gpu) -> dict[int, str]:
    """id(pipeline) -> "file(constants that tell variants apart)"."""
    out = {}
    for key, kernel in gpu._kernels._kernels.items():
        if len(key) == 4 and isinstance(key[3], tuple) and all(isinstance(c, tuple) for c in key[3]):
            consts = dict(key[3])  # the canonical key: (package, file, entry, sorted constants)
            keys = ("QTYPE", "OUT", "ACCUM", "TT", "LANES", "BLOCK", "BM", "BN", "TM")
            tag = ",".join(f"{k}={v}" for k, v in consts.items() if k in keys)
            out[id(kernel.pipeline)] = f"{key[1]}" + (f"({tag})" if tag else "")
    return out


def _prefill_tape(engine, ids: list[int]) -> list:
    """The dispatches of one prefill step of `ids` at position 0: recorded once while taping (its writes make
    it no replayable step, but each dispatch can be repeated), then finished and forgotten."""
    engine.prefill_argmax(ids)  # compile, make every buffer and parameter block first
    engine.reset()
    gpu = engine.gpu
    gpu.start_tape()
    engine.model.record(ids, 0, all_logits=False)
    tape = list(gpu._tape)
    gpu.stop_tape()
    engine.cache.sync_host()
    engine.reset()
    return tape


def _timed(gpu, entries, reps: int) -> tuple[float, float, float]:
    """(Python s to record, s to finish and submit, s from the submit to idle) of `entries` recorded `reps` times.

    wgpu-core encodes a compute pass on the CPU when its encoder is finished (at the flush): that time is the
    second figure, and the third is the GPU's from the submit on (plus a readback's round trip)."""
    gpu.wait()
    t0 = time.perf_counter()
    for _ in range(reps):
        gpu.replay(entries)
    t1 = time.perf_counter()
    gpu.flush()
    t2 = time.perf_counter()
    gpu.wait()
    return t1 - t0, t2 - t1, time.perf_counter() - t2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--context", type=int, default=1024)
    p.add_argument("--kv", default="f32", choices=sorted(MODES))
    p.add_argument("--block", type=int, default=None,
                   help="positions per block of the blocks attention variant (default: the driver's BLOCK)")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--prefill", type=int, default=0,
                   help="probe a prefill step of this many tokens at position 0 (default: a decode step at --context)")
    p.add_argument("--old-prefill", action="store_true", help="the old matvec for batches (no tiled matmul)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "kernel_probe.json"))
    a = p.parse_args()
    if a.block is not None:
        driver.BLOCK = a.block  # read when the cache makes its Attention
    if a.old_prefill:
        tiled.MIN_TOKENS = None
    # room for the context, the greedy steps that tape the decode step, and the engine's usual 2,048 at least
    engine = load_engine(a.model, kv=a.kv, progress=False, batch=max(128, a.prefill),
                         max_positions=max(2048, a.context + a.prefill + 64))
    ids = engine.tokenizer.encode(PROMPT)
    ids = (ids * (1 + max(a.context, a.prefill) // len(ids)))[: max(a.context, a.prefill)]
    if a.prefill:
        a.context = 0
        tape = _prefill_tape(engine, ids[: a.prefill])
    else:
        tok = engine.prefill_argmax(ids)
        tok = engine._steps_on_gpu(tok, 4, lambda j: None)[-1]
        tape = engine.model.last_tape
    tape = [e for e in tape if e is not None and len(e) == 3]  # dispatches (not texture copies)
    gpu, names = engine.gpu, _names(engine.gpu)
    kinds = Counter((id(e[0]), e[2]) for e in tape)
    first = {}
    for e in tape:
        first.setdefault((id(e[0]), e[2]), e)
    rows = []
    base = min(_timed(gpu, [], 1)[2] for _ in range(5))  # a submit and wait with nothing in it
    for key, count in kinds.items():
        _, encode_s, gpu_s = _timed(gpu, [first[key]], a.reps)
        us = (gpu_s - base) / a.reps * 1e6
        rows.append({"kernel": names.get(key[0], "?"), "groups": list(key[1]), "per_step": count, "gpu_us": us,
                     "step_us": us * count, "encode_us": encode_s / a.reps * 1e6})
    rows.sort(key=lambda r: -r["step_us"])
    py_s, encode_s, gpu_s = _timed(gpu, tape, 20)
    step = {"dispatches": len(tape), "gpu_ms_per_step": (gpu_s - base) / 20 * 1e3, "round_trip_ms": base * 1e3,
            "python_ms_per_step": py_s / 20 * 1e3, "encode_ms_per_step": encode_s / 20 * 1e3,
            "sum_of_kinds_ms": sum(r["step_us"] for r in rows) / 1e3}
    py_calls = {"direct": [], "wgpu-py": []}  # the replay's Python per step by dispatch call path, interleaved
    for _ in range(3):
        for path in py_calls:
            gpu.direct_pass_calls = path == "direct"
            py_calls[path].append(_timed(gpu, tape, 20)[0] / 20 * 1e3)
    gpu.direct_pass_calls = True
    step["python_ms_per_step_by_calls"] = {k: min(v) for k, v in py_calls.items()}
    what = f"prefill of {a.prefill} ({'matvec' if a.old_prefill else 'tiled'})" if a.prefill else f"context {a.context}"
    print(f"{engine.gpu.description}, kv {a.kv}, {what}, block {driver.BLOCK}: {len(tape)} dispatches per step")
    print(f"{'kernel':48} {'groups':>14} {'n/step':>6} {'us each':>8} {'us/step':>8} {'encode us':>9}")
    for r in rows:
        print(f"{r['kernel'][:48]:48} {str(tuple(r['groups'])):>14} {r['per_step']:6d} {r['gpu_us']:8.2f} "
              f"{r['step_us']:8.1f} {r['encode_us']:9.2f}")
    print(f"whole step replayed 20x: GPU {step['gpu_ms_per_step']:.3f} ms/step (kinds summed: "
          f"{step['sum_of_kinds_ms']:.3f}), Python replay {step['python_ms_per_step']:.3f} ms/step, pass encoded "
          f"and submitted {step['encode_ms_per_step']:.3f} ms/step")
    by = step["python_ms_per_step_by_calls"]
    print(f"Python replay by dispatch calls (best of 3 interleaved): direct {by['direct']:.3f} ms/step, "
          f"wgpu-py {by['wgpu-py']:.3f} ms/step ({by['wgpu-py'] / by['direct']:.2f}x)")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": platform.node(), "kv": a.kv, "context": a.context, "prefill": a.prefill,
                               "old_prefill": a.old_prefill, "step": step,
                               "kinds": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
