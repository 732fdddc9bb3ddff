"""Which files of a dest are bonsai-sync's: those its lock records. Every other file is the user's;
it is named and left alone unless the user says to keep it there (recorded as `[[foreign]]` in
the lock) or to delete it."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path
from typing import Any

FOREIGN = "not written by bonsai-sync (not in bonsai-sync.lock)"
FOREIGN_NEEDED = "not written by bonsai-sync (not in bonsai-sync.lock), and the closure needs this path"
KEPT_NEEDED = "kept as the user's file (bonsai-sync.lock [[foreign]]), and the closure needs this path"
# what `sync` does with the files it did not write: refuse (the default), keep them, or delete them
MODES = ("refuse", "keep", "delete")


def files_below(top: str) -> set[str]:
    """The relative posix path of every non-folder entry below `top` (dot-folders included, links
    to folders followed once, `__pycache__` left out): everything a swap of `top` would replace."""
    found: set[str] = set()
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
            try:
                info = entry.stat()
            except OSError:
                found.add(rel)  # a dangling or looping link: still something a swap would take away
                continue
            if not stat.S_ISDIR(info.st_mode):
                found.add(rel)
            elif entry.name != "__pycache__" and (info.st_dev, info.st_ino) not in above:
                stack.append((entry.path, rel + "/", above))
    return found


def recorded(data: dict[str, Any] | None) -> frozenset[str]:
    """The paths parsed lock `data` records as the user's own files, kept in the dest."""
    entries = (data or {}).get("foreign", [])
    if not isinstance(entries, list):
        return frozenset()
    return frozenset(e["path"] for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str))


def section(paths: list[str] | tuple[str, ...]) -> str:
    """The lock's text recording `paths` as the user's files (empty for none)."""
    from .lock import quoted

    return "".join(f"\n[[foreign]]\npath = {quoted(p)}\n" for p in sorted(paths))


def carry(dest: Path, tree: Path, paths: list[str] | tuple[str, ...]) -> None:
    """Put the user's files `paths` of `dest` into the new tree `tree` unchanged (a hard link where
    the file system allows, else a copy; a link stays a link)."""
    for rel in paths:
        source, target = dest / rel, tree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
            continue
        try:
            os.link(source, target)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK):
                raise
            shutil.copy2(source, target)
