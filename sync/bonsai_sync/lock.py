"""`<dest>/bonsai-sync.lock`: every copied file, its source and sha256, and the tool version (TOML)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w

from . import __version__
from .errors import FatalError
from .plan import Plan, PlannedFile

LOCK_NAME = "bonsai-sync.lock"
_HEADER = "# Written by bonsai-sync; do not edit. `bonsai-sync check` compares the surface with it.\n"


def render(plan: Plan) -> str:
    """The lock file's text for `plan` (stable: same plan, same bytes)."""
    body = {
        "tool": "bonsai-sync",
        "version": __version__,
        "surface": plan.surface,
        "file": [{"path": f.rel, "source": f.source, "sha256": f.sha256} for f in plan.files],
    }
    return _HEADER + tomli_w.dumps(body)


def read(dest: Path) -> dict[str, PlannedFile] | None:
    """The files a lock records, by path below the dest; None when there is no lock."""
    path = dest / LOCK_NAME
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FatalError(f"{path}: unreadable lock ({exc}); run `bonsai-sync sync` to rewrite it") from None
    return {e["path"]: PlannedFile(e["path"], e["source"], e["sha256"]) for e in data.get("file", [])}
