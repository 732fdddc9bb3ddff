"""Write a plan into a temporary tree, verify it there, then swap it in place of the dest."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import FatalError
from .lock import LOCK_NAME
from .plan import Plan


@dataclass(frozen=True)
class Counts:
    """What a sync did to one surface."""

    written: int
    removed: int
    unchanged: int


def count(plan: Plan, before: dict[str, str]) -> Counts:
    """Written / removed / unchanged, comparing the plan with the dest's current files."""
    unchanged = sum(1 for f in plan.files if before.get(f.rel) == f.sha256)
    removed = len(before.keys() - {f.rel for f in plan.files})
    return Counts(len(plan.files) - unchanged, removed, unchanged)


def write(root: Path, plan: Plan, lock_text: str, check: Callable[[Path], None]) -> None:
    """Build the new tree next to the dest, run `check` on it, then swap; on any failure the
    dest is left exactly as it was."""
    dest = root / plan.dest
    tmp = dest.parent / f".{dest.name}.bonsai-sync-new"
    old = dest.parent / f".{dest.name}.bonsai-sync-old"
    for leftover in (tmp, old):
        shutil.rmtree(leftover, ignore_errors=True)
    created = next((p for p in reversed(dest.parents) if not p.exists()), None)
    try:
        for planned in plan.files:
            data = (root / planned.source).read_bytes()
            if hashlib.sha256(data).hexdigest() != planned.sha256:
                raise FatalError(f"{planned.source}: changed while syncing; run `bonsai-sync sync` again")
            target = tmp / planned.rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / LOCK_NAME).write_text(lock_text, encoding="utf-8")
        check(tmp)
        if dest.exists():
            dest.rename(old)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not dest.exists():
            old.rename(dest)
        if created is not None and not any(f.is_file() for f in created.rglob("*")):
            shutil.rmtree(created, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
