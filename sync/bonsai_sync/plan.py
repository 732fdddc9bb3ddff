"""Turn a closure graph into a plan: every file the surface needs, at the same relative path."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class PlannedFile:
    """One file of the copy: `rel` below the dest, `source` relative to the repo root."""

    rel: str
    source: str
    sha256: str


@dataclass(frozen=True)
class Plan:
    """What a surface's dest must hold, exactly; `dest` is relative to the repo root."""

    surface: str
    dest: str
    files: tuple[PlannedFile, ...]
    # top-level third-party names the closure imports (all declared for the surface)
    third_party: tuple[str, ...] = ()

    def by_rel(self) -> dict[str, PlannedFile]:
        return {f.rel: f for f in self.files}


def make_plan(surface: str, dest: str, root: Path, graph: nx.DiGraph, digest: dict[Path, str], third_party: set[str]) -> Plan:
    """Every node of `graph` that has a file, mirrored below `dest` (namespace packages have none)."""
    root = root.resolve()
    files = {}
    for _, data in graph.nodes(data=True):
        path = data.get("path")
        if path is None:
            continue
        sha = digest.get(path) or hashlib.sha256(path.read_bytes()).hexdigest()
        files[data["rel"]] = PlannedFile(data["rel"], path.relative_to(root).as_posix(), sha)
    return Plan(surface, dest, tuple(files[k] for k in sorted(files)), tuple(sorted(third_party)))
