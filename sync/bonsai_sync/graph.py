"""Build a surface's import graph (networkx) from its entry modules, resolving every scanned fact."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

import networkx as nx

from .errors import ClosureError, Diagnostic
from .facts import Facts, ImportFact, ResourceFact
from .index import ModuleIndex, ModuleInfo

_ALWAYS = set(sys.stdlib_module_names) | {"__future__"}


class GraphBuilder:
    """Walks from the entries; nodes are module names and resource paths (`pkg/x.wgsl`),
    edges carry the import site (`file`, `line`, `col`)."""

    def __init__(self, root: Path, index: ModuleIndex, facts_of: Callable[[Path], Facts], allowed: set[str], table: str):
        self.root = root.resolve()
        self.table = table
        self.index = index
        self.facts_of = facts_of
        self.allowed = allowed
        self.graph = nx.DiGraph()
        self.errors: list[Diagnostic] = []
        self.third_party: set[str] = set()
        self.problems: list[tuple[ModuleInfo, Diagnostic, str]] = []
        self._queue: deque[ModuleInfo] = deque()

    def where(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if self.root in path.parents else str(path)

    def add_root(self, info: ModuleInfo, reason: str) -> None:
        self._add_module(info)
        self.graph.nodes[info.name].setdefault("reasons", []).append(reason)

    def run(self) -> nx.DiGraph:
        while self._queue:
            info = self._queue.popleft()
            if info.file is not None:
                self._follow(info, self.facts_of(info.file))
        return self.graph

    def fail(self) -> None:
        if self.errors:
            raise ClosureError(*sorted(set(self.errors)))

    def _add_module(self, info: ModuleInfo) -> None:
        if info.name in self.graph:
            return
        kind = "namespace" if info.file is None else ("package" if info.is_package else "module")
        self.graph.add_node(info.name, kind=kind, path=info.file, root=info.root, rel=info.rel)
        self._queue.append(info)
        parent = info.name.rpartition(".")[0]
        if parent:
            parent_info = self.index.find(parent)
            assert parent_info is not None
            self._add_module(parent_info)
            self.graph.add_edge(info.name, parent, kind="parent package", file=None, line=0, col=0)

    def _link(self, source: ModuleInfo, target: ModuleInfo, kind: str, line: int, col: int) -> None:
        self._add_module(target)
        site = self.where(source.file) if source.file else source.rel
        if not self.graph.has_edge(source.name, target.name):
            self.graph.add_edge(source.name, target.name, kind=kind, file=site, line=line, col=col)

    def _outside(self, info: ModuleInfo, name: str, kind: str, fact: ImportFact) -> None:
        """A node for something the copy does not hold (so `why` and `graph` can show it)."""
        assert info.file is not None
        self.graph.add_node(name, kind=kind, path=None, root=None, rel=name)
        self.graph.add_edge(info.name, name, kind=fact.kind, file=self.where(info.file), line=fact.line, col=fact.col)

    def _error(self, info: ModuleInfo, line: int, col: int, message: str) -> None:
        assert info.file is not None
        self.errors.append(Diagnostic(self.where(info.file), line, col, message))

    def _follow(self, info: ModuleInfo, facts: Facts) -> None:
        assert info.file is not None
        for problem in facts.problems:
            diagnostic = Diagnostic(self.where(info.file), problem.line, problem.col, problem.message)
            if problem.kind == "syntax":
                self.errors.append(diagnostic)
            else:
                self.problems.append((info, diagnostic, problem.kind))
        for fact in facts.imports:
            if not fact.type_checking:
                self._import(info, fact)
        for resource in facts.resources:
            self._resource(info, resource)

    def _absolute(self, info: ModuleInfo, fact: ImportFact) -> str | None:
        if fact.level == 0:
            return fact.module
        base = (fact.package or info.package).split(".") if (fact.package or info.package) else []
        if fact.level - 1 >= len(base):
            return None
        base = base[: len(base) - (fact.level - 1)]
        return ".".join(base + ([fact.module] if fact.module else []))

    def _import(self, info: ModuleInfo, fact: ImportFact) -> None:
        name = self._absolute(info, fact)
        if name is None:
            if not fact.optional:
                self._error(info, fact.line, fact.col, f"relative import beyond the top-level package {info.name.split('.')[0]!r}")
            return
        top = name.split(".")[0]
        if self.index.find(top) is None:
            if top in self.allowed:
                self.third_party.add(top)
                self._outside(info, top, "third-party", fact)
            elif top not in _ALWAYS and not fact.optional:
                self._error(info, fact.line, fact.col, f"cannot import {name!r}: not first-party, not stdlib, and not in `third-party` of [{self.table}]; declare it there or fix the import")
                self._outside(info, top, "not allowed", fact)
            return
        target = self.index.find(name)
        if target is None:
            if not fact.optional:
                self._error(info, fact.line, fact.col, f"no module named {name!r} in the source roots; fix the import, or wrap it in try/except ImportError if it is optional")
                self._outside(info, name, "missing", fact)
            return
        self._link(info, target, fact.kind, fact.line, fact.col)
        names = list(fact.names)
        if names == ["*"]:
            target_facts = self.facts_of(target.file) if target.file else Facts()
            names = list(target_facts.all_names or ())
        for attr in names:
            sub = self.index.find(f"{name}.{attr}") if target.is_package else None
            if sub is not None:
                self._link(info, sub, fact.kind, fact.line, fact.col)

    def _resource(self, info: ModuleInfo, fact: ResourceFact) -> None:
        assert info.file is not None
        if fact.package is None:
            base = info.file.parent
        else:
            anchor = self.index.find(fact.package)
            if anchor is None:
                if self.index.find(fact.package.split(".")[0]) is not None and not fact.optional:
                    self._error(info, fact.line, fact.col, f"resource anchor {fact.package!r} is not a first-party package")
                return
            self._link(info, anchor, "resource anchor", fact.line, fact.col)
            base = anchor.dirs[0] if anchor.dirs else anchor.root
        path = Path(base, *fact.parts).resolve()
        if info.root not in path.parents:
            self._error(info, fact.line, fact.col, f"resource {'/'.join(fact.parts)!r} escapes the source root {self.where(info.root)}")
            return
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        if not files:
            if not fact.optional:
                self._error(info, fact.line, fact.col, f"resource {self.where(path)} does not exist")
            return
        site = self.where(info.file)
        for file in files:  # a directory resource brings every file below it
            node = self.add_file(file, info.root)
            self.graph.add_edge(info.name, node, kind="resource", file=site, line=fact.line, col=fact.col)

    def _file_node(self, path: Path, root: Path) -> str:
        return path.relative_to(root).as_posix()

    def add_file(self, path: Path, root: Path) -> str:
        node = self._file_node(path, root)
        if node not in self.graph:
            self.graph.add_node(node, kind="resource", path=path, root=root, rel=node)
        return node
