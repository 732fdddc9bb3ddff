"""Show a closure graph: the shortest chain to a node (`why`), JSON, and Graphviz dot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Surface
from .errors import UsageError

if TYPE_CHECKING:
    from .digraph import DiGraph


def _node_for(graph: DiGraph, target: str, root: Path, dest: str) -> str:
    """The node `target` names: a module, a source file, a path below a source root, or a file of
    the surface's copy (below its dest)."""
    if target in graph:
        return target
    wanted = (root / target).resolve()
    copy = (root / dest).resolve()
    rel = wanted.relative_to(copy).as_posix() if wanted.is_relative_to(copy) else Path(target).as_posix()
    for node, data in graph.nodes(data=True):
        path = data.get("path")
        if path is not None and (path == wanted or data["rel"] == rel):
            return node
    raise UsageError(f"{target}: not in this surface's closure (give a module name, a source file, or a file of the copy)")


def shortest_chain(graph: DiGraph, surface: Surface, target: str, root: Path) -> list[str]:
    """`entry`, then one line per hop: `-> module  (file:line:col, kind)`."""
    import networkx as nx

    node = _node_for(graph, target, root, surface.dest)
    searched = graph.to_networkx()
    best: list[str] | None = None
    entries = [n for n, d in graph.nodes(data=True) if "entry" in d.get("reasons", ())]
    others = [n for n, d in graph.nodes(data=True) if d.get("reasons") and "entry" not in d["reasons"]]
    starts = entries if any(nx.has_path(searched, e, node) for e in entries) else others
    for start in starts:
        try:
            path = nx.shortest_path(searched, start, node)
        except nx.NetworkXNoPath:
            continue
        if best is None or len(path) < len(best):
            best = path
    if best is None:
        raise UsageError(f"{target}: no import chain from the entries of surface {surface.name!r}")
    lines = [f"{best[0]}  ({', '.join(graph.nodes[best[0]]['reasons'])})"]
    for a, b in zip(best, best[1:], strict=False):
        edge = graph.edges[a, b]
        site = f"{edge['file']}:{edge['line']}:{edge['col']}" if edge.get("file") else "implied"
        extra = f", {edge['how']}" if edge.get("how") else ""
        lines.append(f"  -> {b}  ({site}, {edge['kind']}{extra})")
    note = _NOTES.get(graph.nodes[node]["kind"])
    if note:
        lines.append(f"{node}: {note}")
    return lines


# What became of a node that is not simply copied, for the last line of `why`
_NOTES = {
    "excluded": "left out by this surface's `exclude` (not copied)",
    "compiled (left out)": 'a compiled module, left out: this surface has compiled = "forbid"',
    "compiled": "a compiled extension module, copied as is (its platform tag is in bonsai-sync.lock)",
    "third-party": "third-party: imported from the environment, not copied",
    "not allowed": "not first-party, stdlib or declared third-party: an error",
    "missing": "not found in the source roots: an error",
    "stub": "a typing stub or py.typed marker of a copied module",
    "metadata": "its distribution's METADATA (importlib.metadata reads it)",
    "license": "its distribution's license file",
}


def to_json(graph: DiGraph, surface: Surface) -> str:
    nodes = [
        {"id": n, "kind": d["kind"], "file": d["rel"] if d.get("path") is not None else None}
        for n, d in sorted(graph.nodes(data=True))
    ]
    edges = [
        {"from": a, "to": b, "kind": d["kind"], "file": d.get("file"), "line": d.get("line"), "col": d.get("col")}
        for a, b, d in sorted(graph.edges(data=True), key=lambda e: (e[0], e[1]))
    ]
    body = {"surface": surface.name, "entry": list(surface.entry), "nodes": nodes, "edges": edges}
    return json.dumps(body, indent=2) + "\n"


def to_dot(graph: DiGraph) -> str:
    lines = ["digraph closure {"]
    for node, data in sorted(graph.nodes(data=True)):
        shape = {"resource": "note", "third-party": "ellipse", "not allowed": "octagon", "missing": "octagon"}.get(data["kind"], "box")
        lines.append(f'  "{node}" [shape={shape}];')
    for a, b, data in sorted(graph.edges(data=True), key=lambda e: (e[0], e[1])):
        style = ' [style=dashed]' if data["kind"] == "parent package" else ""
        lines.append(f'  "{a}" -> "{b}"{style};')
    lines.append("}")
    return "\n".join(lines) + "\n"
