"""Files a copied module brings along: its `.pyi` stub, its package's `py.typed`, and for a
distribution installed into a source root, its METADATA and license files."""

from __future__ import annotations

from pathlib import Path

from ..config.dists import find_dists


def add_extras(builder, stubs: bool) -> None:
    """Add stub, typing-marker and distribution-metadata nodes for the copied modules of `builder`'s graph."""
    graph = builder.graph
    dists = None
    for name, data in list(graph.nodes(data=True)):
        path, kind = data.get("path"), data["kind"]
        if path is None or kind not in ("module", "package", "compiled"):
            continue
        if stubs:
            for extra in _typing_files(name, path, kind):
                node = builder.add_file(extra, data["root"], "stub")
                graph.add_edge(name, node, kind="stub", file=None, line=0, col=0, how="")
        if "." not in name:
            if dists is None:
                dists = find_dists(builder.index.roots)
            dist = dists.get(name)
            if dist is not None:
                for file, what in [(dist.metadata, "metadata"), *((f, "license") for f in dist.licenses)]:
                    if file is not None:
                        root = next(r for r in builder.index.roots if r in file.parents)
                        node = builder.add_file(file, root, what)
                        graph.add_edge(name, node, kind=f"distribution {what}", file=None, line=0, col=0, how="")


def _typing_files(name: str, path: Path, kind: str) -> list[Path]:
    last = name.rpartition(".")[2]
    found = []
    if kind == "package":
        found += [path.parent / "__init__.pyi", path.parent / "py.typed"]
    else:
        found.append(path.parent / f"{last}.pyi")
        stub_package = path.parent / last
        if (stub_package / "__init__.pyi").is_file() and not (stub_package / "__init__.py").is_file():
            found += sorted(stub_package.rglob("*.pyi"))
    return [p for p in found if p.is_file()]
