"""Turn a closure into a plan: every file the surface needs, at the same relative path (pure:
the digests come from the caller, nothing is read here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .digest import Digest

if TYPE_CHECKING:
    from .closure import Closure


@dataclass(frozen=True)
class PlannedFile:
    """One file of the copy: `rel` below the dest, `source` relative to the repo root."""

    rel: str
    source: str
    sha256: str
    # "module", "compiled", "resource", "stub", "metadata" or "license"
    kind: str = "module"
    # a compiled module's platform/ABI tag ("cpython-311-x86_64-linux-gnu", "abi3")
    tag: str = ""
    executable: bool = False
    # a scanned module's facts (factcodec's JSON): the lock records them so that a cold run need not parse it
    scan: str = ""


@dataclass(frozen=True)
class Plan:
    """What a surface's dest must hold, exactly; `dest` is relative to the repo root."""

    surface: str
    dest: str
    files: tuple[PlannedFile, ...]
    # top-level third-party names the closure imports (all declared for the surface)
    third_party: tuple[str, ...] = ()
    # the Python the facts were scanned for ("3.11") and the scanner that made them (cache.scanner_id)
    python: str = ""
    scanner: str = ""

    def by_rel(self) -> dict[str, PlannedFile]:
        return {f.rel: f for f in self.files}


def make_plan(surface: str, dest: str, root: Path, closure: Closure, digest_of: Callable[[Path], Digest],
              python: str = "", scanner: str = "") -> Plan:
    """Every copied node of the closure graph, mirrored below `dest` (namespace packages have no file),
    with the facts of each scanned one."""
    from .factcodec import encode
    from .graph import COPIED
    from .index import compiled_tag

    root = root.resolve()
    files = {}
    for _, data in closure.graph.nodes(data=True):
        path = data.get("path")
        if path is None or data["kind"] not in COPIED:
            continue
        digest = digest_of(path)
        kind = "module" if data["kind"] == "package" else data["kind"]
        tag = compiled_tag(path.name) if kind == "compiled" else ""
        scan = encode(data["facts"]) if "facts" in data else ""
        files[data["rel"]] = PlannedFile(data["rel"], path.relative_to(root).as_posix(), digest.sha256, kind, tag,
                                         digest.executable, scan)
    return Plan(surface, dest, tuple(files[k] for k in sorted(files)), closure.third_party, python, scanner)
