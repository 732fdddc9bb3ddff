"""Find dynamic imports, unfollowable imports and resource paths in the expressions of a statement."""

from __future__ import annotations

from typing import Any

import libcst as cst

from .exprs import FILE, IMPORT_MODULE, UNFOLLOWABLE, literal, path_of, qualname
from .facts import ImportFact, Problem, ResourceFact

_DATA_HINT = "declare the files in this surface's `data` globs"
_HIDDEN_HINT = "declare its targets in this surface's `hidden-imports`"


class CallFinder(cst.CSTVisitor):
    """Visits one statement's expressions (not nested bodies) and reports to the walker."""

    def __init__(self, walker: Any, ctx: Any) -> None:
        super().__init__()
        self.walker = walker
        self.ctx = ctx

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        return False

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        name = qualname(node.func, self.walker.aliases)
        if name == IMPORT_MODULE:
            self.import_module(node)
            return True
        if name == "__import__":
            self.dunder_import(node)
            return True
        if name in UNFOLLOWABLE:
            self.problem(node, "dynamic", f"cannot follow {UNFOLLOWABLE[name]}; {_HIDDEN_HINT}")
            return True
        return self.resource(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> bool:
        return self.resource(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self.resource(node)

    def problem(self, node: Any, kind: str, message: str) -> None:
        self.walker.add(node, lambda line, col: Problem(kind, message, line, col))

    def import_module(self, node: cst.Call) -> None:
        args = {a.keyword.value if a.keyword else i: a.value for i, a in enumerate(node.args)}
        target = literal(args.get(0, args.get("name")))
        anchor = args.get(1, args.get("package"))
        package = literal(anchor) if anchor is not None else None
        here = isinstance(anchor, cst.Name) and anchor.value in ("__package__", "__spec__")
        if target is None or (target.startswith(".") and package is None and not here):
            self.problem(node, "dynamic", f"cannot follow import_module() of a non-literal name; {_HIDDEN_HINT}")
            return
        module = target.lstrip(".")
        self.fact(node, module, (), len(target) - len(module), "import_module", package)

    def dunder_import(self, node: cst.Call) -> None:
        args = {a.keyword.value if a.keyword else i: a.value for i, a in enumerate(node.args)}
        target = literal(args.get(0, args.get("name")))
        fromlist = args.get(3, args.get("fromlist"))
        names: tuple[str, ...] | None = ()
        if fromlist is not None:
            elements = getattr(fromlist, "elements", None)
            found = [literal(e.value) for e in elements] if elements is not None else [None]
            names = tuple(str(n) for n in found) if None not in found else None
        level_node = args.get(4, args.get("level"))
        level = int(level_node.value) if isinstance(level_node, cst.Integer) else 0
        if target is None or names is None or (level_node is not None and not isinstance(level_node, cst.Integer)):
            self.problem(node, "dynamic", f"cannot follow __import__() of a non-literal name; {_HIDDEN_HINT}")
            return
        self.fact(node, target, names, level, "__import__", None)

    def fact(self, node: Any, module: str, names: tuple[str, ...], level: int, kind: str, package: str | None) -> None:
        ctx = self.ctx

        def make(line: int, col: int) -> ImportFact:
            return ImportFact(module, names, level, line, col, kind, ctx.in_function, ctx.optional, ctx.type_checking, package)

        self.walker.add(node, make)

    def resource(self, node: Any) -> bool:
        path = path_of(node, self.walker.aliases)
        if path is None:
            return True
        if path.anchor == FILE and path.literal:
            return False  # the file itself, e.g. Path(__file__).resolve()
        if not path.literal or not path.parts:
            self.problem(node, "resource", f"resource path is not a literal; {_DATA_HINT}")
            return False
        optional = self.ctx.optional

        def make(line: int, col: int) -> ResourceFact:
            return ResourceFact(path.anchor, path.parts, line, col, optional)

        self.walker.add(node, make)
        return False
