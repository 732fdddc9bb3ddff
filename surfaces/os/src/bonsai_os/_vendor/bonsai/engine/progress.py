"""A one-line progress bar on stderr (quiet when stderr is not a terminal unless forced)."""

from __future__ import annotations

import sys
import time


class Progress:
    """`with Progress("loading", total) as bar: bar.advance(n)` draws `label [####    ] 42%`."""

    def __init__(self, label: str, total: int, enabled: bool = True, stream=None) -> None:
        self.label, self.total, self.done = label, max(1, total), 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._last = 0.0
        self._t0 = time.perf_counter()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(frac * 30)
            self.stream.write(f"\r{self.label} [{bar:<30}] {frac * 100:3.0f}%")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.stream.write(f" ({time.perf_counter() - self._t0:.1f}s)\n")
            self.stream.flush()
