"""CPU seconds a process and its descendants have used (Linux /proc), sampled in a thread for time windows.

Where the shared machine makes wall time noisy, CPU time says how much work a run took: the browser's is
spread over Chromium's processes (SwiftShader runs in the GPU process, Pyodide in a renderer), so this
sums the whole tree. `CpuSampler(pid)` samples (wall clock, CPU seconds) every `period` seconds;
`cpu_between(t0, t1)` interpolates the CPU seconds used between two `time.time()` stamps.
"""

from __future__ import annotations

import os
import threading
import time
from bisect import bisect_left
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of `pid` and its reaped children) from /proc/pid/stat, or None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid ...
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return int(fields[1]), (utime + stime + cutime + cstime) / _TICK


def tree_pids(root: int) -> list[int]:
    """`root` and every live descendant."""
    parents = {int(pid): s[0] for pid in os.listdir("/proc") if pid.isdigit() and (s := _stat(pid)) is not None}
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def tree_cpu_s(root: int, pids: list[int] | None = None) -> float:
    """CPU seconds used by `root` and its live descendants (`pids`, if known) plus the children they reaped."""
    total = 0.0
    for pid in pids if pids is not None else tree_pids(root):
        stat = _stat(str(pid))
        if stat is None:  # gone: its time left with it (or went to its parent's reaped-children count)
            return tree_cpu_s(root)
        total += stat[1]
    return total


class CpuSampler:
    """A daemon thread recording (time.time(), tree_cpu_s(pid)) every `period` seconds until `stop()`."""

    def __init__(self, pid: int, period: float = 0.05) -> None:
        self.pid, self.period = pid, period
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._pids = tree_pids(pid)
        self.samples.append((time.time(), tree_cpu_s(pid, self._pids)))  # the first one before any window
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        pids, found_at = self._pids, time.monotonic()
        while not self._stop.wait(self.period):
            if time.monotonic() - found_at > 1.0:  # the full /proc scan costs ~7 ms: once a second
                pids, found_at = tree_pids(self.pid), time.monotonic()
            self.samples.append((time.time(), tree_cpu_s(self.pid, pids)))

    def stop(self) -> None:
        """End the thread after one last sample (so a window that just closed is covered)."""
        self._stop.set()
        self._thread.join()
        self.samples.append((time.time(), tree_cpu_s(self.pid)))

    def _at(self, t: float) -> float:
        times = [s[0] for s in self.samples]
        i = bisect_left(times, t)
        if i == 0 or i == len(times):
            raise ValueError(f"time {t:.3f} is outside the samples ({times[0]:.3f} .. {times[-1]:.3f})")
        (t0, c0), (t1, c1) = self.samples[i - 1], self.samples[i]
        return c0 + (c1 - c0) * (t - t0) / (t1 - t0)

    def cpu_between(self, start: float, end: float) -> float:
        """CPU seconds the tree used from wall time `start` to `end` (interpolated between samples)."""
        return self._at(end) - self._at(start)
