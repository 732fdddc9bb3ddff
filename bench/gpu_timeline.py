"""Where a decode token's wall time goes, by the GPU's own clock: timestamp queries in the GPU-resident loop.

Prefills --context tokens, decodes a warm-up block, then decodes --new-tokens greedily (`Engine._steps_on_gpu`,
as `generate` does) twice:
  1. "passes": a timestamp at the beginning and end of every compute pass. GPU busy per token (the passes'
     sum), the span from the first pass's start to the last one's end, and what is left of the wall time;
     beside it, the host's time per token in Python, in ending passes (wgpu-core turns a pass's commands into
     Vulkan calls there) and in submits.
  (twice: the first run may find the GPU's clocks still low)
  2. "dispatches": a timestamp after every dispatch too (the native feature timestamp-query-inside-passes),
     so each dispatch's time from the one before it ends to its own end, by kernel: what one costs on the GPU,
     barrier included. Writing the timestamps may itself cost the GPU a little; run 1 has none inside passes.
Needs an adapter with timestamp-query (lavapipe and the H200's Vulkan driver have it). Prints tables and writes
JSON.

    python bench/gpu_timeline.py [--model PATH] [--context 1024] [--new-tokens 64] [--kv f32]
"""

from __future__ import annotations

import argparse
import faulthandler
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kernel_probe import PROMPT, _names  # bench/: the probe's prompt and kernel names
from resident_profile import decode  # bench/: the resident loop as decode_bench.py times it
from results_file import write_results

from bonsai.engine.native import load_engine
from bonsai.gpu.device import Gpu
from bonsai.gpu.recorder import Recorder
from bonsai.kv.attention import driver
from bonsai.kv.format.modes import MODES

FEATURES = ("timestamp-query", "timestamp-query-inside-passes")
SET_SIZE = 4096  # queries per query set (WebGPU's most)


class TimelineGpu(Gpu):
    """`Gpu` with timestamps around every compute pass (and after every dispatch, with `per_dispatch`) while
    `timing` is on, and a host-side clock on ending passes."""

    def __init__(self, device: Any, adapter: Any) -> None:
        super().__init__(device, adapter)
        self.timing = False
        self.per_dispatch = False
        self.sets: list[Any] = []
        self.counts: list[int] = []
        self.used = SET_SIZE  # queries used in the newest set
        self.passes: list[dict] = []  # per pass: its set and indices, and per dispatch (pipeline, set, index)
        self.host = {"end_pass_s": 0.0}

    def _query(self, n: int) -> tuple[Any, int]:
        if self.used + n > SET_SIZE:
            self.sets.append(self.device.create_query_set(type="timestamp", count=SET_SIZE))
            self.counts.append(0)
            self.used = 0
        self.used += n
        self.counts[-1] = self.used  # queries written in each set
        return self.sets[-1], self.used - n

    def _begin_pass(self, encoder: Any) -> Any:
        if not self.timing:
            return super()._begin_pass(encoder)
        qs, i = self._query(2)
        self.passes.append({"set": qs, "begin": i, "end": i + 1, "dispatches": []})
        return encoder.begin_compute_pass(timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": i,
                                                            "end_of_pass_write_index": i + 1})

    def _record(self, pipeline: Any, bind_group: Any, groups: tuple[int, ...]) -> None:
        super()._record(pipeline, bind_group, groups)
        if self.timing and self.per_dispatch:
            from wgpu.backends.wgpu_native.extras import write_timestamp

            qs, i = self._query(1)  # one clock for every set: a pass's queries may lie in two
            write_timestamp(self._pass, qs, i)
            self.passes[-1]["dispatches"].append((id(pipeline), qs, i))

    def _end_pass(self) -> None:
        t0 = time.perf_counter()
        super()._end_pass()
        self.host["end_pass_s"] += time.perf_counter() - t0

    def begin_timing(self, per_dispatch: bool) -> None:
        """Time what is recorded from now on: fresh query sets, timestamps around passes (and after every dispatch
        with `per_dispatch`), the host's clock on ending passes from zero."""
        self.sets, self.counts, self.used, self.passes = [], [], SET_SIZE, []
        self.host = {"end_pass_s": 0.0}
        self.timing, self.per_dispatch = True, per_dispatch

    def end_timing(self) -> tuple[list[tuple[int, int]], dict[int, list[float]]]:
        """Stop timing (after a wait): each pass's (begin, end) in ns, and by pipeline id each dispatch's us from
        the end of the one before it (or its pass's start) to its own end."""
        self.timing = False
        ts = self.timestamps_ns()
        spans = [(ts[id(p["set"])][p["begin"]], ts[id(p["set"])][p["end"]]) for p in self.passes]
        per_kernel: dict[int, list[float]] = defaultdict(list)
        for p in self.passes:
            t_prev = ts[id(p["set"])][p["begin"]]
            for pipe, qs, i in p["dispatches"]:
                t = ts[id(qs)][i]
                per_kernel[pipe].append((t - t_prev) / 1e3)
                t_prev = t
        return spans, per_kernel

    def timestamps_ns(self) -> dict[int, list[int]]:
        """Every query set's resolved timestamps in nanoseconds, by id of the set."""
        import numpy as np
        from wgpu.backends.wgpu_native._ffi import lib

        period = lib.wgpuQueueGetTimestampPeriod(self.queue._internal)  # ns per tick
        out = {}
        U = self._wgpu.BufferUsage
        for qs, n in zip(self.sets, self.counts, strict=True):
            # only the queries written: Vulkan waits for a resolved query to be written, forever if it never is
            buf = self.device.create_buffer(size=8 * SET_SIZE, usage=U.QUERY_RESOLVE | U.COPY_SRC)
            enc = self.device.create_command_encoder()
            enc.resolve_query_set(qs, 0, n, buf, 0)
            self.queue.submit([enc.finish()])
            ticks = np.frombuffer(self.read(buf, 8 * n), np.uint64)
            out[id(qs)] = [int(t * period) for t in ticks]
        return out


def timed_run(engine: Any, gpu: TimelineGpu, tok: int, n: int, steps: int, per_dispatch: bool) -> tuple[int, dict]:
    gpu.wait()
    gpu.begin_timing(per_dispatch)
    c0, m0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
    tok = decode(engine, tok, n, steps)
    gpu.wait()
    wall, cpu, main_cpu = time.perf_counter() - t0, time.process_time() - c0, time.thread_time() - m0
    spans, per_kernel = gpu.end_timing()
    busy = sum(b - a for a, b in spans)
    span = max(b for _, b in spans) - min(a for a, _ in spans)
    ms = 1e3 / n
    row = {"mode": "dispatches" if per_dispatch else "passes", "tokens": n, "wall_ms_per_token": wall * ms,
           "gpu_busy_ms_per_token": busy / 1e6 / n, "gpu_span_ms_per_token": span / 1e6 / n,
           "passes_per_token": len(spans) / n, "host_cpu_ms_per_token": cpu * ms, "main_thread_cpu_ms_per_token": main_cpu * ms,
           "end_pass_ms_per_token": gpu.host["end_pass_s"] * ms}
    return tok, {"row": row, "per_kernel": per_kernel}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None)
    p.add_argument("--context", type=int, default=1024)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--kv", default="f32", choices=sorted(MODES))
    p.add_argument("--resident-steps", type=int, default=16)
    p.add_argument("--no-fuse-merge", action="store_true",
                   help="blocks attention: merge in a dispatch of its own (merge_blocks.wgsl), not in the fold's")
    p.add_argument("--gpu-kernels", action="store_true", help="a GPU adapter's kernels even on a CPU one")
    p.add_argument("--stack-after", type=float, default=600, help="print every thread's stack and exit after this many s")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "gpu_timeline.json"))
    a = p.parse_args()
    driver.FUSE_MERGE = not a.no_fuse_merge  # read when the cache makes its Attention
    if a.gpu_kernels:  # every kernel choice reads `is_cpu` (as decode_bench.py --gpu-kernels)
        Recorder.is_cpu = property(lambda self: False)  # type: ignore[method-assign,assignment]
    faulthandler.dump_traceback_later(a.stack_after, exit=True)  # where a run that hangs waits
    gpu = TimelineGpu.create(extra_features=FEATURES)
    missing = [f for f in FEATURES if f not in gpu.device.features]
    if missing:
        raise SystemExit(f"{gpu.description} lacks {', '.join(missing)}: no GPU timestamps here")
    engine = load_engine(a.model, gpu=gpu, kv=a.kv, progress=False, resident_steps=a.resident_steps,
                         max_positions=max(2048, a.context + 3 * a.new_tokens + 64))
    ids = engine.tokenizer.encode(PROMPT)
    ids = (ids * (1 + a.context // len(ids)))[: a.context]
    say = lambda what: print(f"gpu_timeline: {what}", file=sys.stderr, flush=True)  # noqa: E731
    say(f"loaded; prefill {len(ids)}")
    tok = engine.prefill_argmax(ids)
    tok = decode(engine, tok, a.resident_steps, a.resident_steps)  # warm-up: the step is taped
    names = _names(gpu)
    results = []
    for per_dispatch in (False, False, True):
        say("timed run" + (" with a timestamp per dispatch" if per_dispatch else ""))
        tok, res = timed_run(engine, gpu, tok, a.new_tokens, a.resident_steps, per_dispatch)
        results.append(res)
    merge = "merge apart" if a.no_fuse_merge else "merge in the fold"
    print(f"{gpu.description}, kv {a.kv}, context {a.context}, {a.new_tokens} tokens per run, {merge}")
    print("| run | wall ms/token | GPU busy ms/token | GPU span ms/token | passes/token | host CPU ms/token "
          "| main thread CPU ms/token | ending passes ms/token |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for res in results:
        r = res["row"]
        print(f"| {r['mode']} | {r['wall_ms_per_token']:.3f} | {r['gpu_busy_ms_per_token']:.3f} | "
              f"{r['gpu_span_ms_per_token']:.3f} | {r['passes_per_token']:.2f} | {r['host_cpu_ms_per_token']:.3f} | "
              f"{r['main_thread_cpu_ms_per_token']:.3f} | "
              f"{r['end_pass_ms_per_token']:.3f} |")
    kernels = []
    for pipe, us in results[-1]["per_kernel"].items():
        kernels.append({"kernel": names.get(pipe, "?"), "per_token": len(us) / a.new_tokens,
                        "median_us": statistics.median(us), "min_us": min(us),
                        "us_per_token": sum(us) / a.new_tokens})
    kernels.sort(key=lambda k: -k["us_per_token"])
    print("\n| kernel (last run) | per token | median us | min us | us per token |\n| --- | ---: | ---: | ---: | ---: |")
    for k in kernels:
        print(f"| {k['kernel'][:60]} | {k['per_token']:.1f} | {k['median_us']:.2f} | {k['min_us']:.2f} | "
              f"{k['us_per_token']:.1f} |")
    write_results(a.out, {"adapter": gpu.description, "kv": a.kv, "context": a.context, "merge": merge,
                          "runs": [r["row"] for r in results], "kernels": kernels})


if __name__ == "__main__":
    main()
