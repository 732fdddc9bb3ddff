"""A surface's closure: its entries, hidden imports and data globs, followed to a complete graph."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config.settings import TABLE, Config, Surface, error, line_of
from ..errors import ClosureError, Diagnostic
from ..scan.facts import Facts
from .build import GraphBuilder
from .digraph import DiGraph
from .index import ModuleIndex


@dataclass(frozen=True)
class Closure:
    """What a surface needs: the graph (nodes with a `path` and a copied kind are copied), the
    errors found on the way (sorted, `path:line:col`), and the third-party names it imports."""

    graph: DiGraph
    errors: tuple[Diagnostic, ...]
    third_party: tuple[str, ...]

    def raise_errors(self) -> None:
        if self.errors:
            raise ClosureError(*self.errors)


def closure(config: Config, surface: Surface, index: ModuleIndex, facts_of: Callable[[Path], Facts],
            want: Callable[[Path], None] | None = None) -> Closure:
    """Follow `surface`'s entries and hints through the source roots (errors are collected, not raised).
    `want` hears of each file to scan as soon as the walk finds it (so that it can be parsed ahead)."""
    from .extras import add_extras
    from .hints import answer_sites, expand
    from .names import unresolved_names

    table = f"{TABLE}.surfaces.{surface.name}"
    builder = GraphBuilder(config.root, index, facts_of, surface, table, want)
    for name in surface.entry:
        info = index.find(name)
        if info is None or info.file is None:
            raise error(config.text, table, "entry", f"entry module {name!r} is not a module in the source roots {list(config.source)}")
        builder.add_root(info, "entry")
    hints = []
    for hint in surface.hidden_imports:
        modules = []
        for pattern in hint.patterns:
            names = expand(index, pattern)
            if not names:
                raise error(config.text, table, "hidden-imports", f"{pattern!r} matches no module in the source roots")
            for name in names:
                info = index.find(name)
                assert info is not None
                if builder.excluded(name) is None:
                    builder.add_root(info, f"hidden-imports {pattern!r}")
                    modules.append(name)
        hints.append((hint, modules))
    graph = builder.run()
    for pattern in surface.data:
        for root in index.roots:
            for path in sorted(root.glob(pattern)):
                if path.is_file() and "__pycache__" not in path.parts:
                    node = builder.add_file(path, root, "resource")
                    graph.nodes[node].setdefault("reasons", []).append(f"data glob {pattern!r}")
    add_extras(builder, surface.stubs)
    line = line_of(config.text, table, "hidden-imports")
    errors = builder.errors + unresolved_names(builder) + _uncovered(builder, surface)
    errors += answer_sites(builder, hints, lambda message: Diagnostic("pyproject.toml", line, 1, f"[{table}] hidden-imports: {message}"))
    return Closure(graph, tuple(sorted(set(errors))), tuple(sorted(builder.third_party)))


def _uncovered(builder: GraphBuilder, surface: Surface) -> list[Diagnostic]:
    """Non-literal resources need a `data` glob declared for the same top-level package."""
    data_tops = {p.split("/")[0] for p in surface.data}
    return [d for info, d in builder.problems if info.name.split(".")[0] not in data_tops]
