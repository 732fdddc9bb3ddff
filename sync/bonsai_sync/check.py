"""Compare a plan with what is on disk, and say why each differing file is stale."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .config import Config
from .digest import digest_tree
from .lock import LOCK_NAME, read, render
from .plan import Plan

CHANGED = "changed upstream"
EDITED = "edited by hand in the surface (differs from bonsai-sync.lock)"
MISSING = "missing"
EXTRA = "extra (not needed by the closure)"
LOCK = "bonsai-sync.lock is out of date"


@dataclass(frozen=True)
class Stale:
    """One file of a surface that is not what `sync` would write, and why."""

    path: str
    reason: str
    # the repo-relative source, when the file comes from one
    source: str | None = None


def stale_files(root: Path, plan: Plan, lock_text: str | None = None) -> list[Stale]:
    """Every difference between `plan` and `root/plan.dest`, sorted by path (the lock is only
    read when a file differs, to tell a hand edit from an upstream change)."""
    dest = root / plan.dest
    disk = digest_tree(str(dest), frozenset({LOCK_NAME}))
    wanted = {f.rel: f.sha256 for f in plan.files}
    locked = (read(dest) or {}) if disk != wanted else {}
    found = []
    for planned in plan.files:
        shown = f"{plan.dest}/{planned.rel}"
        have = disk.get(planned.rel)
        if have is None:
            found.append(Stale(shown, MISSING, planned.source))
        elif have != planned.sha256:
            hand = planned.rel in locked and locked[planned.rel].sha256 != have
            found.append(Stale(shown, EDITED if hand else CHANGED, planned.source))
    for rel in sorted(disk.keys() - {f.rel for f in plan.files}):
        found.append(Stale(f"{plan.dest}/{rel}", EDITED if rel in locked and locked[rel].sha256 != disk[rel] else EXTRA))
    lock_path = dest / LOCK_NAME
    if not found and (not lock_path.is_file() or lock_path.read_text(encoding="utf-8") != (lock_text or render(plan))):
        found.append(Stale(f"{plan.dest}/{LOCK_NAME}", LOCK))
    return sorted(found, key=lambda s: s.path)


def diff(root: Path, item: Stale) -> str:
    """A unified diff from the surface's file to what `sync` would write."""
    import difflib

    have_path = root / item.path
    have = have_path.read_text(encoding="utf-8", errors="replace").splitlines(True) if have_path.is_file() else []
    want_path = root / item.source if item.source else None
    want = want_path.read_text(encoding="utf-8", errors="replace").splitlines(True) if want_path else []
    return "".join(difflib.unified_diff(have, want, f"a/{item.path}", f"b/{item.path}"))


def check_surface(config: Config, name: str) -> list[str]:
    """`path: reason` for each stale file of surface `name` ([] when fresh); for other tools."""
    from .pipeline import Workspace

    workspace = Workspace(config.root)
    plan = workspace.plan(workspace.config.surface(name))
    return [f"{item.path}: {item.reason}" for item in stale_files(workspace.root, plan)]
