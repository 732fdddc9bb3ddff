"""`<dest>/bonsai-sync.lock`: every copied file, its source, sha256 and kind, each scanned module's
facts, the target Python, the scanner and the tool version (TOML)."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

from . import __version__
from .errors import FatalError
from .plan import Plan, PlannedFile

LOCK_NAME = "bonsai-sync.lock"
LOCK_FORMAT = 3
_HEADER = "# Written by bonsai-sync; do not edit. `bonsai-sync check` compares the surface with it.\n"


def render(plan: Plan) -> str:
    """The lock file's text for `plan` (stable: same plan, same bytes). A module's `scan` is a TOML
    literal string: factcodec's JSON holds no single quote, and a literal string is read fast. It
    opens with a tag binding it to the file's sha256, the Python and the scanner (`binding`): a line
    is all a text merge moves, so a lock that git merged from two versions (one side's `sha256`, the
    other's `scan`) cannot pass one file's facts off as another's."""
    import tomli_w

    head = {"tool": "bonsai-sync", "version": __version__, "format": LOCK_FORMAT, "surface": plan.surface,
            "python": plan.python, "scanner": plan.scanner}
    parts = [_HEADER, tomli_w.dumps(head)]
    for f in plan.files:
        parts.append(f"\n[[file]]\npath = {quoted(f.rel)}\nsource = {quoted(f.source)}\nsha256 = {quoted(f.sha256)}\n"
                     f"kind = {quoted(f.kind)}\n")
        if f.tag:
            parts.append(f"platform = {quoted(f.tag)}\n")
        if f.executable:
            parts.append("executable = true\n")
        if f.scan:
            parts.append(f"scan = '{binding(f.sha256, plan.python, plan.scanner)} {f.scan}'\n")
    return "".join(parts)


def quoted(text: str) -> str:
    """A TOML basic string, as tomli-w writes it (quoted as is when nothing needs escaping)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    import tomli_w

    return tomli_w.dumps({"k": text})[4:-1]


def read(dest: Path) -> dict[str, PlannedFile] | None:
    """The files a lock records, by path below the dest; None when there is no lock."""
    return files_of(dest, load(dest))


def load(dest: Path) -> dict[str, Any] | None:
    """The dest's lock as parsed TOML; None when there is none (an unreadable one is a FatalError)."""
    path = dest / LOCK_NAME
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _unreadable(dest, exc) from None


def files_of(dest: Path, data: dict[str, Any] | None) -> dict[str, PlannedFile] | None:
    """The files parsed lock `data` records, by path below the dest; None for no lock."""
    if data is None:
        return None
    try:
        return {
            e["path"]: PlannedFile(e["path"], e["source"], e["sha256"], e.get("kind", "module"), e.get("platform", ""),
                                   bool(e.get("executable", False)), e.get("scan", "").partition(" ")[2])
            for e in data.get("file", [])
        }
    except (KeyError, TypeError, AttributeError) as exc:
        raise _unreadable(dest, exc) from None


def binding(sha256: str, python: str, scanner: str) -> str:
    """The tag a `scan` record opens with: it holds for facts made of these bytes, for this Python, by this scanner."""
    return hashlib.sha256(f"{sha256}:{python}:{scanner}".encode()).hexdigest()[:16]


def recorded_scans(data: dict[str, Any] | None, scanner: str) -> dict[str, str]:
    """`sha256:python -> encoded facts` for each module parsed lock `data` records, when `scanner`
    wrote it and the record's tag binds it to that entry's sha256; {} when there is no lock or another
    scanner wrote it (its facts are not to be trusted)."""
    if data is None or data.get("scanner") != scanner or data.get("format") != LOCK_FORMAT:
        return {}
    python = data.get("python")
    found = {}
    for entry in data.get("file", []):
        if isinstance(entry, dict) and isinstance(entry.get("scan"), str) and isinstance(entry.get("sha256"), str):
            tag, _, text = entry["scan"].partition(" ")
            if tag == binding(entry["sha256"], str(python), scanner):
                found[f"{entry['sha256']}:{python}"] = text
    return found


def _unreadable(dest: Path, exc: Exception) -> FatalError:
    return FatalError(f"{dest / LOCK_NAME}: unreadable lock ({exc}); run `bonsai-sync sync --force` to rewrite it")
