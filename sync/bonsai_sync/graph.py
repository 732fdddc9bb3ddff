"""Build a surface's import graph (networkx) from its entry modules, resolving every scanned fact."""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path

from .config import Surface
from .digraph import DiGraph
from .errors import Diagnostic
from .facts import DynamicSite, Facts, ImportFact, ResourceFact
from .fsutil import walk_files
from .index import ModuleIndex, ModuleInfo

ALWAYS = set(sys.stdlib_module_names) | {"__future__"}
# Kinds of nodes whose file is copied into the surface
COPIED = {"module", "package", "compiled", "resource", "stub", "metadata", "license"}


def how(fact: ImportFact) -> str:
    """How an import site runs, for `why`: "" (at import time), "optional", "in a function", "conditional"."""
    if fact.optional or fact.in_function:
        return "optional" if fact.optional else "in a function"
    return "conditional" if fact.conditional else ""


class GraphBuilder:
    """Walks from the entries; nodes are module names and file paths (`pkg/x.wgsl`), edges carry
    the import site (`file`, `line`, `col`). Name checks and dynamic sites are kept for later steps."""

    def __init__(self, root: Path, index: ModuleIndex, facts_of: Callable[[Path], Facts], surface: Surface, table: str,
                 want: Callable[[Path], None] | None = None):
        self.root = root.resolve()
        self.table = table
        self.index = index
        self.facts_of = facts_of
        self.want = want
        self.surface = surface
        self.allowed = set(surface.third_party)
        self.graph = DiGraph()
        self.errors: list[Diagnostic] = []
        self.third_party: set[str] = set()
        # non-literal resources (`data` globs answer them), by the module they are in
        self.problems: list[tuple[ModuleInfo, Diagnostic]] = []
        # `from X import name` where `name` is no submodule: X must bind it (checked after the walk)
        self.names: list[tuple[ModuleInfo, ImportFact, ModuleInfo, str]] = []
        # imports of names the scanner cannot read (`hidden-imports` answer them)
        self.dynamic: list[tuple[ModuleInfo, DynamicSite]] = []
        self._queue: deque[ModuleInfo] = deque()
        self._shown: dict[Path, str] = {}
        self._excluded_by: dict[str, str | None] = {}

    def where(self, path: Path) -> str:
        """`path` as messages show it: relative to the repo root when below it."""
        shown = self._shown.get(path)
        if shown is None:
            text, top = str(path), str(self.root) + os.sep
            shown = self._shown[path] = Path(text[len(top):]).as_posix() if text.startswith(top) else text
        return shown

    def add_root(self, info: ModuleInfo, reason: str) -> None:
        self._add_module(info)
        self.graph.nodes[info.name].setdefault("reasons", []).append(reason)

    def run(self) -> DiGraph:
        while self._queue:
            info = self._queue.popleft()
            if info.file is not None and not info.compiled:
                facts = self.facts_of(info.file)
                self.graph.nodes[info.name]["facts"] = facts
                self._follow(info, facts)
        return self.graph

    def excluded(self, name: str) -> str | None:
        """The `exclude` pattern that leaves `name` (or a package above it) out, if any."""
        if name not in self._excluded_by:
            parts = name.split(".")
            prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            self._excluded_by[name] = next((p for prefix in prefixes for p in self.surface.exclude
                                            if fnmatchcase(prefix, p)), None)
        return self._excluded_by[name]

    def _add_module(self, info: ModuleInfo) -> None:
        chain = [info]
        while chain[-1].name not in self.graph and "." in chain[-1].name:
            parent = self.index.find(chain[-1].name.rpartition(".")[0])
            assert parent is not None
            chain.append(parent)
        for child in reversed(chain):  # top-down, without recursion: package trees may be deep
            if child.name in self.graph:
                continue
            if child.compiled:
                kind = "compiled"
            else:
                kind = "namespace" if child.file is None else ("package" if child.is_package else "module")
            self.graph.add_node(child.name, kind=kind, path=child.file, root=child.root, rel=child.rel)
            self._queue.append(child)
            if self.want is not None and child.file is not None and not child.compiled:
                self.want(child.file)
            parent_name = child.name.rpartition(".")[0]
            if parent_name:
                self.graph.add_edge(child.name, parent_name, kind="parent package", file=None, line=0, col=0, how="")

    def _link(self, source: ModuleInfo, target: ModuleInfo, fact: ImportFact) -> None:
        self._add_module(target)
        site = self.where(source.file) if source.file else source.rel
        if not self.graph.has_edge(source.name, target.name):
            self.graph.add_edge(source.name, target.name, kind=fact.kind, file=site, line=fact.line, col=fact.col, how=how(fact))

    def outside(self, info: ModuleInfo, name: str, kind: str, fact: ImportFact, path: Path | None = None) -> None:
        """A node for something the copy does not hold (so `why` and `graph` can show it)."""
        assert info.file is not None
        if name not in self.graph:
            self.graph.add_node(name, kind=kind, path=None, source=path, root=None, rel=name)
        self.graph.add_edge(info.name, name, kind=fact.kind, file=self.where(info.file), line=fact.line, col=fact.col, how=how(fact))

    def error(self, info: ModuleInfo, line: int, col: int, message: str) -> None:
        assert info.file is not None
        self.errors.append(Diagnostic(self.where(info.file), line, col, message))

    def _follow(self, info: ModuleInfo, facts: Facts) -> None:
        assert info.file is not None
        for problem in facts.problems:
            diagnostic = Diagnostic(self.where(info.file), problem.line, problem.col, problem.message)
            if problem.kind == "syntax":
                self.errors.append(diagnostic)
            else:
                self.problems.append((info, diagnostic))
        for fact in facts.imports:
            if not fact.type_checking:
                self._import(info, fact)
        for resource in facts.resources:
            self._resource(info, resource)
        self.dynamic.extend((info, site) for site in facts.dynamic)

    def absolute(self, info: ModuleInfo, level: int, module: str, package: str | None) -> str | None:
        """The absolute name of a (possibly relative) import in module `info`; None beyond the top."""
        if level == 0:
            return module
        anchor = package or info.package
        base = anchor.split(".") if anchor else []
        if level - 1 >= len(base):
            return None
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([module] if module else []))

    def _import(self, info: ModuleInfo, fact: ImportFact) -> None:
        name = self.absolute(info, fact.level, fact.module, fact.package)
        if name is None:
            if not fact.optional:
                self.error(info, fact.line, fact.col, f"relative import beyond the top-level package {info.name.split('.')[0]!r}")
            return
        top = name.split(".")[0]
        pattern = self.excluded(name)
        if pattern is not None and self.index.find(top) is None:
            self._excluded(info, name, None, fact, pattern)  # a name the surface does without
            return
        if top in self.allowed:
            self.third_party.add(top)
            self.outside(info, top, "third-party", fact)
            return
        if self.index.find(top) is None:
            if top not in ALWAYS and not fact.optional:
                self.error(info, fact.line, fact.col, f"cannot import {name!r}: not first-party, not stdlib, and not in `third-party` of [{self.table}]; declare it there or fix the import")
                self.outside(info, top, "not allowed", fact)
            return
        target = self.index.find(name)
        if target is None:
            if not fact.optional:
                self.error(info, fact.line, fact.col, f"no module named {name!r} in the source roots; fix the import, or wrap it in try/except ImportError if it is optional")
                self.outside(info, name, "missing", fact)
            return
        if not self._admit(info, target, fact):
            return
        self._link(info, target, fact)
        names = list(fact.names)
        if names == ["*"]:
            target_facts = self.facts_of(target.file) if target.file and not target.compiled else Facts()
            names = list(target_facts.all_names or ())
        for attr in names:
            sub = self.index.find(f"{name}.{attr}") if target.is_package else None
            if sub is not None:
                if self._admit(info, sub, fact):
                    self._link(info, sub, fact)
            elif fact.kind == "from" and fact.names != ("*",) and not fact.optional:
                self.names.append((info, fact, target, attr))

    def _admit(self, info: ModuleInfo, target: ModuleInfo, fact: ImportFact) -> bool:
        """Whether the surface takes `target`: `exclude` and `compiled = "forbid"` leave modules out;
        a required import of one is an error at its site, an optional one is fine."""
        pattern = self.excluded(target.name)
        if pattern is not None:
            self._excluded(info, target.name, target.file, fact, pattern)
            return False
        if target.compiled and self.surface.compiled == "forbid" and target.file is not None:
            self.outside(info, target.name, "compiled (left out)", fact, target.file)
            if not fact.optional:
                self.error(info, fact.line, fact.col, f"imports {target.name!r}, a compiled module ({self.where(target.file)}), and [{self.table}] has compiled = \"forbid\"")
            return False
        return True

    def _excluded(self, info: ModuleInfo, name: str, path: Path | None, fact: ImportFact, pattern: str) -> None:
        self.outside(info, name, "excluded", fact, path)
        if fact.required:
            importer = "" if info.name in self.surface.entry else f"exclude {info.name!r} too, "
            self.error(info, fact.line, fact.col, f"imports {name!r}, which `exclude` leaves out ({pattern!r}); "
                       f"{importer}drop the pattern, or make the import optional (try/except ImportError, or "
                       "inside a function)")

    def _resource(self, info: ModuleInfo, fact: ResourceFact) -> None:
        assert info.file is not None
        if fact.package is None:
            base = info.file.parent
        else:
            anchor = self.index.find(fact.package)
            if anchor is None:
                if self.index.find(fact.package.split(".")[0]) is not None and not fact.optional:
                    self.error(info, fact.line, fact.col, f"resource anchor {fact.package!r} is not a first-party package")
                return
            self._link(info, anchor, ImportFact(anchor.name, (), 0, fact.line, fact.col, "resource anchor"))
            base = anchor.dirs[0] if anchor.dirs else anchor.root
        path = Path(base, *fact.parts).resolve()
        if info.root not in path.parents:
            self.error(info, fact.line, fact.col, f"resource {'/'.join(fact.parts)!r} escapes the source root {self.where(info.root)}")
            return
        files = [path] if path.is_file() else sorted(walk_files(path))
        if not files:
            if not fact.optional:
                self.error(info, fact.line, fact.col, f"resource {self.where(path)} does not exist")
            return
        site = self.where(info.file)
        for file in files:  # a directory resource brings every file below it
            node = self.add_file(file, info.root, "resource")
            self.graph.add_edge(info.name, node, kind="resource", file=site, line=fact.line, col=fact.col, how="")

    def add_file(self, path: Path, root: Path, kind: str) -> str:
        node = path.relative_to(root).as_posix()
        if node not in self.graph:
            self.graph.add_node(node, kind=kind, path=path, root=root, rel=node)
        return node
