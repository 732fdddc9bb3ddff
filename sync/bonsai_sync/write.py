"""Write a plan into a fresh temporary tree next to the dest (the caller verifies it, then swaps it in)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from .errors import FatalError
from .fsutil import remove_tree
from .lock import LOCK_NAME
from .plan import Plan
from .swap import new_name


def stage(root: Path, plan: Plan, lock_text: str) -> Path:
    """A uniquely named temporary tree beside the dest holding every planned file (bytes checked
    against the plan, executable bits kept) and the lock; nothing is left behind on failure."""
    dest = root / plan.dest
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise FatalError(f"{plan.dest}: exists and is not a directory; bonsai-sync only replaces a folder it wrote")
    for parent in dest.parents:
        if parent.exists() and not parent.is_dir():
            raise FatalError(f"{parent.relative_to(root).as_posix()}: is a file, and the dest {plan.dest} needs a folder there")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tree = Path(tempfile.mkdtemp(prefix=new_name(dest), dir=dest.parent))
    try:
        for planned in plan.files:
            data = (root / planned.source).read_bytes()
            if hashlib.sha256(data).hexdigest() != planned.sha256:
                raise FatalError(f"{planned.source}: changed while syncing; run `bonsai-sync sync` again")
            target = tree / planned.rel
            target.parent.mkdir(parents=True, exist_ok=True)
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
