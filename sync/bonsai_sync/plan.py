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
    # the package its absolute imports of the copy were rewritten below (`rewrite-imports`), or ""
    rewrite: str = ""


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
              python: str = "", scanner: str = "", rewrite: str = "") -> Plan:
    """Every copied node of the closure graph, mirrored below `dest` (namespace packages have no file),
    with the facts of each scanned one. With `rewrite` (a package name), each module whose absolute
    imports of the copy's own packages `rewrite_imports` changes is planned with the rewritten bytes."""
    import hashlib

    from .factcodec import encode
    from .graph import COPIED
    from .index import compiled_tag
    from .rewrite import rewrite_imports, tops_of

    root = root.resolve()
    nodes = [d for _, d in closure.graph.nodes(data=True) if d.get("path") is not None and d["kind"] in COPIED]
    tops = tops_of(d["rel"] for d in nodes if d["kind"] in ("module", "package", "compiled")) if rewrite else frozenset()
    files = {}
    for data in nodes:
        path = data["path"]
        digest = digest_of(path)
        kind = "module" if data["kind"] == "package" else data["kind"]
        tag = compiled_tag(path.name) if kind == "compiled" else ""
        scan = encode(data["facts"]) if "facts" in data else ""
        source = path.relative_to(root).as_posix()
        rewritten = ""
        if tops and kind == "module" and path.suffix == ".py":
            before = path.read_bytes()
            after = rewrite_imports(before, tops, rewrite, source)
            if after != before:  # planned as written: its facts are the source's, so none are recorded
                digest, scan, rewritten = Digest(hashlib.sha256(after).hexdigest(), digest.executable), "", rewrite
        files[data["rel"]] = PlannedFile(data["rel"], source, digest.sha256, kind, tag, digest.executable, scan,
                                         rewritten)
    return Plan(surface, dest, tuple(files[k] for k in sorted(files)), closure.third_party, python, scanner)
