"""A surface's closure: its entries, hidden imports and data globs, followed to a complete graph."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import networkx as nx

from .config import TABLE, Config, Surface, error
from .facts import Facts
from .graph import GraphBuilder
from .index import ModuleIndex


def closure(
    config: Config, surface: Surface, index: ModuleIndex, facts_of: Callable[[Path], Facts], strict: bool = True
) -> nx.DiGraph:
    """The import graph of everything `surface` needs; errors name `file:line:col` and raise
    ClosureError, unless `strict` is False (then they are in `graph.graph["errors"]`)."""
    table = f"{TABLE}.surfaces.{surface.name}"
    builder = GraphBuilder(config.root, index, facts_of, set(surface.third_party), table)
    for name in surface.entry:
        info = index.find(name)
        if info is None or info.file is None:
            raise error(config.text, table, "entry", f"entry module {name!r} is not a module in the source roots {list(config.source)}")
        builder.add_root(info, "entry")
    for pattern in surface.hidden_imports:
        names = _hidden(index, pattern)
        if not names:
            raise error(config.text, table, "hidden-imports", f"{pattern!r} matches no module in the source roots")
        for name in names:
            info = index.find(name)
            assert info is not None
            builder.add_root(info, "hidden-imports")
    graph = builder.run()
    for pattern in surface.data:
        for root in index.roots:
            for path in sorted(root.glob(pattern)):
                if path.is_file() and "__pycache__" not in path.parts:
                    builder.add_file(path, root)
    _uncovered(builder, surface)
    graph.graph["errors"] = sorted(set(builder.errors))
    if strict:
        builder.fail()
    graph.graph["third_party"] = sorted(builder.third_party)
    return graph


def _hidden(index: ModuleIndex, pattern: str) -> list[str]:
    if pattern.endswith(".**"):
        return index.submodules(pattern[:-3], recursive=True)
    if pattern.endswith(".*"):
        return index.submodules(pattern[:-2], recursive=False)
    return [pattern] if index.find(pattern) is not None else []


def _uncovered(builder: GraphBuilder, surface: Surface) -> None:
    """Non-literal imports need a `hidden-imports` entry, non-literal resources a `data` glob,
    declared for the same top-level package."""
    hidden_tops = {p.split(".")[0] for p in surface.hidden_imports}
    data_tops = {p.split("/")[0] for p in surface.data}
    for info, diagnostic, kind in builder.problems:
        top = info.name.split(".")[0]
        covered = top in hidden_tops if kind == "dynamic" else top in data_tops
        if not covered:
            builder.errors.append(diagnostic)

