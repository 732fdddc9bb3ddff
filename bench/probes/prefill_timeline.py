"""When a prompt step's host work happens: its submits, the commits of the rows read ahead, the last read.

One engine, `--repeats` prefills of `--tokens` tokens from position 0 after a warm-up (`Engine.prefill_argmax`, as
the prefill rows of decode_bench), each timed by wrapping the calls that mark its phases: every submit (`flush`,
start and end), the end of recording, each commit of a read ahead (`Staging._commit_read`, start and end: its start waits for the
read's copy to be done on the GPU), the step's last read (`read_with`, which waits for the GPU to finish; the flow's last read is a read
queued ahead instead) and every commit into the host master (`KVCache._commit`, start and end).
Prints each event's median time from the start of the step (ms), and the host's rate of committing the rows read
ahead (mapped memory into the master), and writes JSON.

    python bench/probes/prefill_timeline.py [--model PATH] [--kv f32] [--tokens 512] [--repeats 7]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from results_file import write_results  # noqa: E402

from bonsai.engine.native import load_engine  # noqa: E402
from bonsai.kv.staging import Staging  # noqa: E402

PROMPT = "The history of the printing press begins in the fifteenth century. "


def wrap(events: list[tuple[str, float]], obj: object, name: str, label: str, *, after: bool = False) -> None:
    """Log (label, time) when obj.name is called (and `label end` when it returns, with after=True)."""
    real = getattr(obj, name)

    def logged(*args, **kwargs):
        events.append((label, time.perf_counter()))
        try:
            return real(*args, **kwargs)
        finally:
            if after:
                events.append((f"{label} end", time.perf_counter()))

    setattr(obj, name, logged)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--kv", default="f32")
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "prefill_timeline.json"))
    a = p.parse_args()
    engine = load_engine(a.model, kv=a.kv, progress=False, warm_up=True, batch=a.tokens, max_positions=a.tokens + 64)
    base = engine.tokenizer.encode(PROMPT)
    ids = (base * (a.tokens // len(base) + 1))[: a.tokens]
    events: list[tuple[str, float]] = []
    wrap(events, engine.gpu, "flush", "submit", after=True)
    wrap(events, engine.model, "record", "record", after=True)
    wrap(events, engine.gpu, "read_with", "last read", after=True)
    wrap(events, engine.cache, "_commit", "master commit", after=True)  # every read's rows, the last read's too
    copied: list[tuple[int, float]] = []  # (bytes, seconds) of each commit ahead: its host copy into the master
    commit_read = Staging._commit_read

    def timed_commit(self, commit, ahead, raw):
        t = time.perf_counter()
        try:
            return commit_read(self, commit, ahead, raw)
        finally:
            copied.append((ahead.words * 4, time.perf_counter() - t))

    Staging._commit_read = timed_commit
    wrap(events, Staging, "_commit_read", "commit ahead", after=True)
    runs = []
    for i in range(a.repeats + 1):
        engine.reset()
        events.clear()
        t0 = time.perf_counter()
        engine.prefill_argmax(ids)
        t1 = time.perf_counter()
        if i:  # the first is a warm-up
            runs.append([(name, (t - t0) * 1e3) for name, t in events] + [("done", (t1 - t0) * 1e3)])
    n = min(len(r) for r in runs)
    rows = []
    for j in range(n):
        names = {r[j][0] for r in runs}
        times = [r[j][1] for r in runs]
        rows.append({"event": "/".join(sorted(names)), "median_ms": statistics.median(times),
                     "min_ms": min(times), "max_ms": max(times)})
    print(f"{engine.gpu.description}: {a.kv}, {a.tokens}-token prefill, {a.repeats} runs, ms from the step's start")
    print("| # | event | median | min | max |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for j, r in enumerate(rows):
        print(f"| {j} | {r['event']} | {r['median_ms']:.2f} | {r['min_ms']:.2f} | {r['max_ms']:.2f} |")
    print(f"prefill {a.tokens / (statistics.median(r[-1][1] for r in runs) / 1e3):,.0f} tok/s (median)")
    if copied:
        nbytes, secs = sum(b for b, _ in copied), sum(t for _, t in copied)
        print(f"commits ahead: {len(copied)} over {a.repeats + 1} prefills, {nbytes / len(copied) / 1e6:.2f} MB and "
              f"{secs / len(copied) * 1e3:.3f} ms each (median {statistics.median(t for _, t in copied) * 1e3:.3f}), "
              f"{nbytes / secs / 1e9:.2f} GB/s from the mapped read into the master")
    write_results(a.out, {"kv": a.kv, "tokens": a.tokens, "repeats": a.repeats, "rows": rows,
                          "device": engine.gpu.description, "commits_ahead": [list(c) for c in copied]})


if __name__ == "__main__":
    main()
