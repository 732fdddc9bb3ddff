"""Reuse a file's digest while its stat (device, inode, size, mtime, ctime, mode) is what it was when it was
hashed, as git's index does; a file changed within RACY_NS of the hashing run is always hashed again."""

from __future__ import annotations

import os
import time
from typing import Any

from .digest import Digest, digest_file

# git's "racily clean" rule: the kernel stamps ctime from a coarse clock (and some file systems in whole
# seconds), so a write just after hashing may keep the stamp; trust only stamps older than this when hashed
RACY_NS = 3_000_000_000


class StatMemo:
    """`path -> (stat key, Digest)` from the last run (`old`) and as this run found it (`new`).
    Any content change sets ctime to the time of the change (not settable by utime), so a file whose
    ctime predates the hashing run by RACY_NS and is unchanged since holds the bytes that were hashed."""

    def __init__(self, old: dict[str, Any] | None) -> None:
        self.old: dict[str, Any] = old if isinstance(old, dict) else {}
        self.new: dict[str, Any] = {}
        self.start = time.time_ns()
        self.hashed = 0  # files read and hashed this run (for tests and benchmarks)
        self.tops: list[str] = []  # the folders walked this run: their entries in `old` are replaced

    def digest(self, path: str, info: os.stat_result) -> Digest:
        """The digest of `path`, whose `os.stat` is `info`."""
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)
        found = self.old.get(path)
        if found is not None and found[0] == key:
            self.new[path] = found
            return found[1]
        digest = digest_file(path)
        self.hashed += 1
        if max(info.st_mtime_ns, info.st_ctime_ns) < self.start - RACY_NS:
            self.new[path] = (key, digest)
        return digest

    def walk(self, top: str) -> None:
        """`digest_tree` is walking `top`: what `old` holds below it is replaced by what it finds."""
        self.tops.append(top.rstrip(os.sep) + os.sep)

    def merged(self) -> dict[str, Any]:
        """What to keep for the next run: this run's findings, and `old`'s entries outside the folders it walked."""
        walked = tuple(self.tops)
        return {**{p: v for p, v in self.old.items() if not p.startswith(walked)}, **self.new}
