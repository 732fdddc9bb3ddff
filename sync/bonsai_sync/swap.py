"""Put a new tree in place of a surface's dest in one atomic step where the OS allows (Linux
renameat2 RENAME_EXCHANGE), and finish or roll back a swap an earlier run left half done."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from pathlib import Path

from .fsutil import remove_tree

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def new_name(dest: Path) -> str:
    return f".{dest.name}.bonsai-sync-new-"


def old_name(dest: Path) -> str:
    return f".{dest.name}.bonsai-sync-old-"


def leftovers(dest: Path) -> tuple[list[Path], list[Path]]:
    """Temporary trees of earlier runs next to `dest`: (new ones, old ones)."""
    try:
        names = sorted(os.listdir(dest.parent))
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    return ([dest.parent / n for n in names if n.startswith(new_name(dest))],
            [dest.parent / n for n in names if n.startswith(old_name(dest))])


def interrupted(dest: Path) -> bool:
    """True when an earlier run stopped between its two renames: the dest is gone, its old tree kept."""
    return not dest.exists() and bool(leftovers(dest)[1])


def recover(dest: Path) -> list[str]:
    """Roll back a swap that moved the dest aside but never put the new tree in (the old tree comes
    back), then delete every leftover temporary tree. A leftover that cannot be deleted (a file the
    OS will not let go of) is named in the warnings returned and tried again next run; it never
    stops a sync, since it lies beside the dest, not in it. Run under the surface's lock."""
    new, old = leftovers(dest)
    if old and not dest.exists():
        newest = max(old, key=lambda p: p.stat().st_mtime)
        os.rename(newest, dest)
        old.remove(newest)
    return [w for w in (discard(leftover) for leftover in new + old) if w]


def discard(tree: Path) -> str | None:
    """Delete a temporary tree; None when done, else a warning naming what could not be deleted."""
    try:
        remove_tree(tree)
    except OSError as exc:
        return (f"{exc.filename or tree}: {exc.strerror or exc}; the leftover copy {tree} could not be deleted "
                "(the next sync tries again)")
    return None


def install(tree: Path, dest: Path) -> str | None:
    """Make `tree` the dest. The old dest, if any, is exchanged with it in one step and then deleted;
    once the new tree is in place the dest is changed, and a failure to delete the old one is only a
    warning (returned)."""
    if not dest.exists():
        os.rename(tree, dest)
        return None
    if _exchange(tree, dest):
        return discard(tree)  # now holds the old dest
    old = tree.with_name(old_name(dest) + tree.name.rpartition("-")[2])
    os.rename(dest, old)  # the gap `recover` closes if the process dies here
    try:
        os.rename(tree, dest)
    except BaseException:
        os.rename(old, dest)
        raise
    return discard(old)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the OS or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))
