"""Write a plan into a fresh temporary tree next to the dest (the caller verifies it, then swaps it in)."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from pathlib import Path

from .errors import FatalError
from .fsutil import remove_tree
from .lock import LOCK_NAME
from .plan import Plan
from .rewrite import rewrite_imports, tops_of
from .swap import new_name

# errors that say the file system (or the OS) makes no hard links at all
_NO_LINKS = {errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}


def stage(root: Path, plan: Plan, lock_text: str, keep: frozenset[str] = frozenset()) -> Path:
    """A uniquely named temporary tree beside the dest holding every planned file (bytes checked
    against the plan, executable bits kept) and the lock; nothing is left behind on failure. The
    files in `keep` (paths below the dest whose copy there is already the plan's) are hard links to
    that copy, so a sync after an edit writes only what changed; where links fail, they are copied."""
    dest = root / plan.dest
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise FatalError(f"{plan.dest}: exists and is not a directory; bonsai-sync only replaces a folder it wrote")
    for parent in dest.parents:
        if parent.exists() and not parent.is_dir():
            raise FatalError(f"{parent.relative_to(root).as_posix()}: is a file, and the dest {plan.dest} needs a folder there")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tree = Path(tempfile.mkdtemp(prefix=new_name(dest), dir=dest.parent))
    folders = {tree}
    linking = bool(keep)
    tops = tops_of(f.rel for f in plan.files if f.kind in ("module", "compiled"))
    try:
        for planned in plan.files:
            target = tree / planned.rel
            if target.parent not in folders:
                target.parent.mkdir(parents=True, exist_ok=True)
                folders.update(target.parents)
            if linking and planned.rel in keep:
                try:
                    os.link(dest / planned.rel, target)
                    continue
                except OSError as exc:
                    linking = exc.errno not in _NO_LINKS  # no links here at all: copy the rest too
            data = (root / planned.source).read_bytes()
            if planned.rewrite:
                data = rewrite_imports(data, tops, planned.rewrite, planned.source)
            if hashlib.sha256(data).hexdigest() != planned.sha256:
                raise FatalError(f"{planned.source}: changed while syncing; run `bonsai-sync sync` again")
            target.write_bytes(data)
            os.chmod(target, 0o755 if planned.executable else 0o644)
        (tree / LOCK_NAME).write_text(lock_text, encoding="utf-8")
        os.chmod(tree, 0o755)
    except BaseException:
        remove_tree(tree)
        raise
    return tree


def created_parents(root: Path, dest: Path) -> Path | None:
    """The highest folder above `dest` that does not exist yet (to remove again if the sync fails)."""
    return next((p for p in reversed(dest.parents) if root in p.parents and not p.exists()), None)
