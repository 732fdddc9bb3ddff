"""Compare a plan with a surface on disk, once: per file what `sync` would do (write, remove,
refuse) and why, which is also what `check` reports and what `build` gates on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .digest import Digest, digest_tree
from .lock import LOCK_NAME, load, read
from .ownership import FOREIGN, FOREIGN_NEEDED, KEPT_NEEDED, files_below, recorded, section
from .plan import Plan, PlannedFile

if TYPE_CHECKING:
    from .statmemo import StatMemo

CHANGED = "changed upstream"
EDITED = "edited by hand in the surface (differs from bonsai-sync.lock)"
MISSING = "missing"
EXTRA = "extra (not needed by the closure)"
MODE = "executable bit differs from the source"
LOCK = "bonsai-sync.lock is out of date"
INTERRUPTED = "an interrupted sync left the surface half swapped; `bonsai-sync sync` finishes or rolls it back"


@dataclass(frozen=True)
class Stale:
    """One file of a surface that is not what `sync` would write, why, and what sync would do."""

    path: str
    reason: str
    # the repo-relative source, when the file comes from one
    source: str | None = None
    # "write", "remove" or "refuse" (a hand edit sync keeps unless --force)
    action: str = "write"


@dataclass(frozen=True)
class SurfaceState:
    """A surface's dest against its plan: the stale files and the lock's text `sync` would write."""

    plan: Plan
    lock_text: str
    stale: tuple[Stale, ...]
    unchanged: int
    # the user's files the lock records as kept in the dest (`[[foreign]]`), still there and not needed
    kept_foreign: tuple[str, ...] = ()

    @property
    def fresh(self) -> bool:
        return not self.stale

    def count(self, action: str) -> int:
        return sum(1 for s in self.stale if s.action == action and not s.path.endswith("/" + LOCK_NAME))

    @property
    def kept(self) -> frozenset[str]:
        """Paths below the dest whose copy there is already what the plan says (bytes and executable bit)."""
        stale = {s.path for s in self.stale}
        return frozenset(f.rel for f in self.plan.files if f"{self.plan.dest}/{f.rel}" not in stale)

    @property
    def refused(self) -> tuple[Stale, ...]:
        return tuple(s for s in self.stale if s.action == "refuse")

    @property
    def foreign(self) -> tuple[Stale, ...]:
        """The files in the dest that bonsai-sync did not write (nor was told to keep)."""
        return tuple(s for s in self.stale if s.action == "foreign")


def surface_state(root: Path, plan: Plan, lock_text: str, interrupted: bool = False,
                  read_lock: Callable[[Path], dict[str, PlannedFile] | None] = read,
                  memo: StatMemo | None = None,
                  read_kept: Callable[[Path], frozenset[str]] = lambda dest: recorded(load(dest))) -> SurfaceState:
    """Every difference between `plan` and `root/plan.dest`, sorted by path. The lock is only read
    (by `read_lock`) when a file differs, to tell a hand edit (refused) from an upstream change
    (written), and a file bonsai-sync wrote from one it did not (foreign: never touched unless the
    user says so; those the lock records as kept, read by `read_kept`, are left alone).
    `memo` spares hashing a dest file whose stat is unchanged since an earlier run hashed it."""
    dest = root / plan.dest
    disk = digest_tree(str(dest), frozenset({LOCK_NAME}), memo)
    wanted = {f.rel: Digest(f.sha256, f.executable) for f in plan.files}
    present = files_below(str(dest)) - {LOCK_NAME}
    differs = disk != wanted or not present <= wanted.keys()
    locked = (read_lock(dest) or {}) if differs else {}
    unrecorded = [rel for rel in present if rel not in locked and (rel not in disk or disk[rel] != wanted.get(rel))]
    kept = read_kept(dest) if unrecorded else frozenset()
    found = [Stale(plan.dest, INTERRUPTED)] if interrupted else []
    unchanged = 0
    for planned in plan.files:
        shown = f"{plan.dest}/{planned.rel}"
        have = disk.get(planned.rel)
        if have is None:
            found.append(Stale(shown, MISSING, planned.source))
        elif have.sha256 != planned.sha256 and planned.rel not in locked:
            found.append(Stale(shown, KEPT_NEEDED if planned.rel in kept else FOREIGN_NEEDED, planned.source, "foreign"))
        elif have.sha256 != planned.sha256:
            hand = locked[planned.rel].sha256 != have.sha256
            found.append(Stale(shown, EDITED if hand else CHANGED, planned.source, "refuse" if hand else "write"))
        elif have.executable != planned.executable:
            found.append(Stale(shown, MODE, planned.source))
        else:
            unchanged += 1
    kept_here = []
    for rel in sorted(present - wanted.keys()):
        if rel in kept and rel not in locked:
            kept_here.append(rel)
        elif rel not in locked:
            found.append(Stale(f"{plan.dest}/{rel}", FOREIGN, None, "foreign"))
        else:
            hand = rel not in disk or locked[rel].sha256 != disk[rel].sha256
            found.append(Stale(f"{plan.dest}/{rel}", EDITED if hand else EXTRA, None, "refuse" if hand else "remove"))
    lock_text += section(kept_here)
    lock_path = dest / LOCK_NAME
    if not found and (not lock_path.is_file() or lock_path.read_text(encoding="utf-8") != lock_text):
        found.append(Stale(f"{plan.dest}/{LOCK_NAME}", LOCK))
    return SurfaceState(plan, lock_text, tuple(sorted(found, key=lambda s: s.path)), unchanged, tuple(kept_here))


def diff(root: Path, item: Stale) -> str:
    """A unified diff from the surface's file to what `sync` would write."""
    import difflib

    have_path = root / item.path
    have = have_path.read_text(encoding="utf-8", errors="replace").splitlines(True) if have_path.is_file() else []
    want_path = root / item.source if item.source else None
    want = want_path.read_text(encoding="utf-8", errors="replace").splitlines(True) if want_path else []
    return "".join(difflib.unified_diff(have, want, f"a/{item.path}", f"b/{item.path}"))
