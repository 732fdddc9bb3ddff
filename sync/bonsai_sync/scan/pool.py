"""Parse the source files a run has to scan: inline when few wait, in a process pool over every
core when many do (libcst is CPU-bound and holds the GIL); the facts are the same either way."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import FatalError
from .facts import Facts

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

# Start a pool once this many discovered files wait for a parse (a worker pays libcst's import, ~0.5 s)
POOL_MIN = 24
# Files per worker below which another worker does not pay for itself
PER_WORKER = 8


def cpus() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def scan_file(path: str, target: tuple[int, int]) -> tuple[str, Facts]:
    """(sha256 of the bytes read, their facts): one parse, in a worker or inline."""
    from .. import scan  # the package, not its function: a test may swap `scan.scan`

    data = Path(path).read_bytes()
    return sha256(data).hexdigest(), scan.scan_bytes(data, target)


def _worker_setup() -> None:
    gc.disable()  # libcst trees are acyclic and freed by reference counting


class Parser:
    """Files to parse are announced (`want`) as the walk discovers them and collected (`get`) in
    walk order; once POOL_MIN wait and more than one core is free, workers parse them ahead."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = cpus() if workers is None else workers
        self._waiting: dict[str, tuple[Path, tuple[int, int]]] = {}
        self._futures: dict[str, Future[Any]] = {}
        self._pool: ProcessPoolExecutor | None = None
        # how many files were parsed inline and in workers (for tests and benchmarks)
        self.parsed = {"inline": 0, "pool": 0}

    def want(self, key: str, path: Path, target: tuple[int, int]) -> None:
        """Announce that the facts under `key` (`sha256:python`) of `path` will be asked for."""
        if key in self._futures or key in self._waiting:
            return
        if self._pool is not None:
            self._futures[key] = self._pool.submit(scan_file, str(path), target)
        else:
            self._waiting[key] = (path, target)

    def get(self, key: str, path: Path, target: tuple[int, int], on_changed: Callable[[], FatalError]) -> Facts:
        """The facts of `path`, whose bytes must hash to `key`'s sha256 (else `on_changed()` is raised)."""
        self._waiting.pop(key, None)
        future = self._futures.pop(key, None)
        if future is None and self._pool is None and len(self._waiting) + 1 >= POOL_MIN and self.workers > 1:
            self._start()
            future = self._pool.submit(scan_file, str(path), target) if self._pool is not None else None
        sha, facts = None, None
        if future is not None:
            from concurrent.futures.process import BrokenProcessPool

            try:
                sha, facts = future.result()
                self.parsed["pool"] += 1
            except BrokenProcessPool:
                pass  # a worker died (out of memory, killed): parse here instead
        if facts is None:
            sha, facts = scan_file(str(path), target)
            self.parsed["inline"] += 1
        if sha != key.partition(":")[0]:
            raise on_changed()
        return facts

    def _start(self) -> None:
        workers = max(1, min(self.workers, (len(self._waiting) + 1) // PER_WORKER))
        if workers < 2:
            return
        from concurrent.futures import ProcessPoolExecutor

        self._pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_setup)
        for key, (path, target) in self._waiting.items():
            self._futures[key] = self._pool.submit(scan_file, str(path), target)
        self._waiting.clear()

    def close(self) -> None:
        """Stop the workers (files announced but never asked for are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._futures.clear()
        self._waiting.clear()
