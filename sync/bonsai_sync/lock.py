"""`<dest>/bonsai-sync.lock`: every copied file, its source, sha256 and kind, and the tool version (TOML)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from . import __version__
from .errors import FatalError
from .plan import Plan, PlannedFile

LOCK_NAME = "bonsai-sync.lock"
LOCK_FORMAT = 2
_HEADER = "# Written by bonsai-sync; do not edit. `bonsai-sync check` compares the surface with it.\n"


def render(plan: Plan) -> str:
    """The lock file's text for `plan` (stable: same plan, same bytes)."""
    entries = []
    for f in plan.files:
        entry: dict[str, object] = {"path": f.rel, "source": f.source, "sha256": f.sha256, "kind": f.kind}
        if f.tag:
            entry["platform"] = f.tag
        if f.executable:
            entry["executable"] = True
        entries.append(entry)
    body = {"tool": "bonsai-sync", "version": __version__, "format": LOCK_FORMAT, "surface": plan.surface, "file": entries}
    import tomli_w

    return _HEADER + tomli_w.dumps(body)


def read(dest: Path) -> dict[str, PlannedFile] | None:
    """The files a lock records, by path below the dest; None when there is no lock."""
    path = dest / LOCK_NAME
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return {
            e["path"]: PlannedFile(e["path"], e["source"], e["sha256"], e.get("kind", "module"), e.get("platform", ""),
                                   bool(e.get("executable", False)))
            for e in data.get("file", [])
        }
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise FatalError(f"{path}: unreadable lock ({exc}); run `bonsai-sync sync --force` to rewrite it") from None
