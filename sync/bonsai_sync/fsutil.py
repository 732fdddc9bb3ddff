"""File-tree helpers that never recurse (package trees can be deeper than Python's recursion limit)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path


def walk_files(top: Path, skip_dirs: frozenset[str] = frozenset({"__pycache__"})) -> Iterator[Path]:
    """Every regular file below `top`, in sorted order per folder, depth first, without recursion."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except (FileNotFoundError, NotADirectoryError):
            continue
        files = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in skip_dirs:
                    stack.append(Path(entry.path))
            elif entry.is_file():
                files.append(Path(entry.path))
        yield from reversed(files)


def listing(top: Path) -> list[str]:
    """What an import finder can see below `top`: the relative posix path of every folder (ending in
    "/") and file, links followed (a folder already on the way down is listed, not entered again), sorted."""
    found = []
    stack = [(top, "", frozenset[tuple[int, int]]())]
    while stack:
        folder, prefix, above = stack.pop()
        try:
            here = os.stat(folder)
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        above = above | {(here.st_dev, here.st_ino)}
        for entry in entries:
            try:
                info = entry.stat()
            except OSError:
                continue  # a dangling link: no finder sees it
            if stat.S_ISDIR(info.st_mode):
                found.append(f"{prefix}{entry.name}/")
                if (info.st_dev, info.st_ino) not in above:
                    stack.append((Path(entry.path), f"{prefix}{entry.name}/", above))
            else:
                found.append(prefix + entry.name)
    return sorted(found)


def remove_tree(top: Path) -> None:
    """Delete `top` and everything below it (links are removed, never followed); a missing `top` is fine."""
    try:
        mode = os.lstat(top).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        os.unlink(top)
        return
    stack = [(top, False)]
    while stack:
        folder, emptied = stack.pop()
        if emptied:
            os.rmdir(folder)
            continue
        stack.append((folder, True))
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), False))
            else:
                os.unlink(entry.path)


def shown(path: object, root: Path | None) -> str:
    """`path` as messages show it: relative to `root` when below it (never resolved: it may be a loop)."""
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    if root is not None and os.path.isabs(text):
        base = os.path.abspath(root)
        if os.path.commonpath([base, text]) == base:
            return Path(os.path.relpath(text, base)).as_posix()
    return text
