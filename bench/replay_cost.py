"""The host's cost of replaying a taped decode step: `pass_ops.replay_native`'s one loop against the pass's
three calls per dispatch, on the default model's step (f32 KV at `--context`); and the step's bookkeeping
(`KVCache.replay_appends` booking every layer's rows, then `Staging.take` as the park does).

The step's runs of dispatches are recorded into an encoder that is never submitted (dropped after each round),
so only the host's side is timed: Python and the C calls that record into wgpu-core, not the GPU. Rounds
alternate the two ways; a round replays the step `--reps` times. Runs on any adapter (on a CPU one with the
GPU kernels, as on a GPU). Prints a table and writes JSON.

    python bench/replay_cost.py [--context 64] [--reps 50] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from results_file import write_results

from bonsai.engine.native import load_engine
from bonsai.gpu.device import Gpu
from bonsai.gpu.recorder import Tape
from bonsai.models import default_model_path


def dispatches_only(tape: list) -> Tape:
    """The tape's dispatches alone (no flush, no copy): replaying it records into the open pass only."""
    return Tape(e for e in tape if e is not None and len(e) == 3)  # copies to textures have six fields


def time_replays(gpu: Gpu, tape: Tape, reps: int) -> float:
    """Seconds per replay of `tape`, recorded `reps` times into one encoder that is then dropped."""
    count = gpu.dispatch_count
    t0 = time.perf_counter()
    for _ in range(reps):
        gpu.replay(tape)
    took = time.perf_counter() - t0
    gpu._end_pass()
    gpu._encoder = None  # never submitted: the GPU runs none of it
    gpu.dispatch_count = count
    return took / reps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "replay_cost.json"))
    a = p.parse_args()
    gpu = Gpu.create()
    gpu.cpu_kernels = False  # the kernels (and so the tape) a GPU gets
    engine = load_engine(a.model or default_model_path(), gpu=gpu, kv="f32", progress=False)
    engine.prefill_argmax(list(range(100, 100 + a.context)))
    engine._steps_on_gpu(2, 4, lambda j: None)  # records and replays the decode tapes
    tape = dispatches_only(engine.model.last_tape)
    gpu.wait()
    times: dict[str, list[float]] = {"native loop": [], "three calls each": []}
    for _ in range(a.rounds):
        for name, native in (("native loop", True), ("three calls each", False)):
            gpu.native_replay = native
            times[name].append(time_replays(gpu, tape, a.reps))
    gpu.native_replay = True
    cache, pos = engine.cache, engine.pos
    t0 = time.perf_counter()
    for _ in range(a.reps * a.rounds):
        cache.replay_appends(pos, 1)
        cache._staging.take()
    bookkeeping = (time.perf_counter() - t0) / (a.reps * a.rounds)
    print(f"{gpu.description}: a decode step's tape, {len(tape)} dispatches, {a.reps} replays a round, "
          f"{a.rounds} rounds alternating")
    print(f"{'replay':<20} {'median us/step':>15} {'best us/step':>13} {'us/dispatch':>12}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<20} {med * 1e6:>15.1f} {min(ts) * 1e6:>13.1f} {med * 1e6 / len(tape):>12.2f}")
    ratio = statistics.median(times["three calls each"]) / statistics.median(times["native loop"])
    print(f"three calls each / native loop: {ratio:.2f}x (medians)")
    print(f"bookkeeping (replay_appends + take, {engine.cfg.n_layers} layers): {bookkeeping * 1e6:.1f} us/step")
    write_results(a.out, {"adapter": gpu.description, "dispatches": len(tape), "reps": a.reps,
                          "seconds_per_step": times, "ratio_calls_to_native": ratio,
                          "bookkeeping_seconds_per_step": bookkeeping})


if __name__ == "__main__":
    main()
