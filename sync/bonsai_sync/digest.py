"""sha256 and executable bit of every file in a tree: how sources are keyed and surfaces compared
(content, not mtime). Symlink loops and cycles are errors naming the link, never endless walks."""

from __future__ import annotations

import errno
import os
import stat
from hashlib import sha256
from typing import NamedTuple, Protocol

SKIP_DIRS = {"__pycache__"}


class Digest(NamedTuple):
    """What a copy must reproduce of one file: its bytes (sha256 hex) and its executable bit."""

    sha256: str
    executable: bool = False


class StatCache(Protocol):
    """What `digest_tree` asks of a memo of earlier digests (statmemo.StatMemo is one)."""

    def walk(self, top: str) -> None: ...

    def digest(self, path: str, info: os.stat_result) -> Digest: ...


def digest_file(path: str) -> Digest:
    with open(path, "rb") as handle:
        data = handle.read()
        mode = os.fstat(handle.fileno()).st_mode
    return Digest(sha256(data).hexdigest(), bool(mode & stat.S_IXUSR))


def digest_tree(top: str, skip_files: frozenset[str] = frozenset(), memo: StatCache | None = None) -> dict[str, Digest]:
    """`relative posix path -> Digest` for every file below `top` (no __pycache__, no
    dot-directories, none of `skip_files` at the top level); {} when `top` does not exist.
    With `memo`, a file whose stat is unchanged since an earlier run hashed it is not read."""
    found: dict[str, Digest] = {}
    if memo is not None:
        memo.walk(top)
    stack = [(top, "", frozenset[tuple[int, int]]())]
    while stack:
        folder, prefix, above = stack.pop()
        try:
            entries = list(os.scandir(folder))
            here = os.stat(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        above = above | {(here.st_dev, here.st_ino)}
        for entry in entries:
            rel = prefix + entry.name
            info = _stat(entry)
            if info is None:
                continue  # a dangling symlink: nothing to copy, nothing to compare
            if stat.S_ISDIR(info.st_mode):
                if entry.name in SKIP_DIRS or entry.name.startswith("."):
                    continue
                if (info.st_dev, info.st_ino) in above:
                    raise OSError(errno.ELOOP, "symlink cycle (the link points at a folder above it)", entry.path)
                stack.append((entry.path, rel + "/", above))
            elif stat.S_ISREG(info.st_mode) and not (prefix == "" and entry.name in skip_files):
                found[rel] = memo.digest(entry.path, info) if memo is not None else digest_file(entry.path)
    return found


def _stat(entry: os.DirEntry) -> os.stat_result | None:
    try:
        return entry.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "symlink loop", entry.path) from None
        raise
