"""An advisory lock per surface, so two bonsai-sync runs never write (or read half-written) one dest."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import FatalError


class BusyError(FatalError):
    """Another bonsai-sync holds the surface's lock (exit 2)."""


@contextlib.contextmanager
def surface_lock(folder: Path, name: str, exclusive: bool, timeout: float) -> Iterator[None]:
    """Hold `folder/<name>.lock` (exclusive to write, shared to read), waiting up to `timeout` seconds.
    A reader on a read-only checkout, where no lock file can be made, goes ahead without one."""
    from ..cache import ensure_folder

    path = folder / f"{name}.lock"
    try:
        ensure_folder(folder)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        if exclusive:
            raise
        yield
        return
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd, exclusive):
            if time.monotonic() >= deadline:
                raise BusyError(f"{name}: another bonsai-sync is running on this surface (lock {path}); "
                                "wait for it to finish and run again")
            time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _try_lock(fd: int, exclusive: bool) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows: msvcrt locks one byte, exclusively
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
