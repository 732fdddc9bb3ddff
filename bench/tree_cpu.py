"""CPU seconds a process and its descendants have used (psutil), sampled in a thread for time windows.

Where the shared machine makes wall time noisy, CPU time says how much work a run took: the browser's is
spread over Chromium's processes (SwiftShader runs in the GPU process, Pyodide in a renderer), so this
sums the whole tree. `CpuSampler(pid)` samples (wall clock, CPU seconds) every `period` seconds;
`cpu_between(t0, t1)` interpolates the CPU seconds used between two `time.time()` stamps.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left

import psutil


def tree_processes(root: int) -> list[psutil.Process]:
    """`root` and every live descendant."""
    top = psutil.Process(root)
    return [top, *top.children(recursive=True)]


def tree_cpu_s(root: int, procs: list[psutil.Process] | None = None) -> float:
    """CPU seconds used by `root` and its live descendants (`procs`, if known) plus the children they reaped."""
    total = 0.0
    for proc in procs if procs is not None else tree_processes(root):
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:  # gone: its time left with it (or went to its parent's reaped-children count)
            return tree_cpu_s(root)
        total += t.user + t.system + t.children_user + t.children_system
    return total


class CpuSampler:
    """A daemon thread recording (time.time(), tree_cpu_s(pid)) every `period` seconds until `stop()`."""

    def __init__(self, pid: int, period: float = 0.05) -> None:
        self.pid, self.period = pid, period
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._procs = tree_processes(pid)
        self.samples.append((time.time(), tree_cpu_s(pid, self._procs)))  # the first one before any window
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        procs, found_at = self._procs, time.monotonic()
        while not self._stop.wait(self.period):
            if time.monotonic() - found_at > 1.0:  # finding the descendants scans /proc: once a second
                procs, found_at = tree_processes(self.pid), time.monotonic()
            self.samples.append((time.time(), tree_cpu_s(self.pid, procs)))

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
