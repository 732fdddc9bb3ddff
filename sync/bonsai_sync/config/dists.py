"""Distribution metadata in source roots (`*.dist-info`): which import names each provides, and
the files a copy carries for it (METADATA, so importlib.metadata.version() works, and licenses)."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

_LICENSE = re.compile(r"^(licen[cs]e|copying|notice|authors)", re.IGNORECASE)


@dataclass(frozen=True)
class DistInfo:
    """One `NAME-VERSION.dist-info` directory: what it provides and what a copy must carry."""

    folder: Path
    tops: frozenset[str]
    metadata: Path | None
    licenses: tuple[Path, ...]


def find_dists(roots: list[Path]) -> dict[str, DistInfo]:
    """Top-level import name -> its distribution's dist-info, for every dist-info in the roots."""
    found: dict[str, DistInfo] = {}
    for root in roots:
        for folder in sorted(root.glob("*.dist-info")):
            if folder.is_dir():
                dist = _read(folder)
                for top in dist.tops:
                    found.setdefault(top, dist)
    return found


def _read(folder: Path) -> DistInfo:
    metadata = folder / "METADATA"
    tops: set[str] = set()
    record = folder / "RECORD"
    if record.is_file():
        with record.open(encoding="utf-8", newline="") as handle:
            for row in csv.reader(handle):
                first = row[0].split("/")[0] if row else ""
                if first and first != ".." and not first.endswith((".dist-info", ".data")) and first != "__pycache__":
                    tops.add(first.split(".")[0])
    top_level = folder / "top_level.txt"
    if not tops and top_level.is_file():
        tops.update(line.strip() for line in top_level.read_text(encoding="utf-8").splitlines() if line.strip())
    if not tops:
        tops.add(folder.name.split("-")[0].lower())
    return DistInfo(folder, frozenset(tops), metadata if metadata.is_file() else None, _licenses(folder, metadata))


def _licenses(folder: Path, metadata: Path) -> tuple[Path, ...]:
    files: set[Path] = set()
    if metadata.is_file():
        from email.parser import HeaderParser  # only when there is a dist-info: its import is not free

        headers = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
        for name in headers.get_all("License-File") or []:
            for candidate in (folder / "licenses" / name, folder / name):
                if candidate.is_file():
                    files.add(candidate)
                    break
    files.update(p for p in (folder / "licenses").rglob("*") if p.is_file())
    files.update(p for p in folder.iterdir() if p.is_file() and _LICENSE.match(p.name))
    return tuple(sorted(files))
