"""Find dynamic imports, unfollowable imports and resource paths in the expressions of a statement."""

from __future__ import annotations

from typing import Any

import libcst as cst

from .exprs import FILE, IMPORT_MODULE, UNFOLLOWABLE, literal, literal_head, path_of, qualname
from .facts import DynamicSite, ImportFact, Problem, ResourceFact

_DATA_HINT = "declare the files in this surface's `data` globs"


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
            self.dynamic(node, UNFOLLOWABLE[name], _path_prefix(node, self.walker.aliases), 0, None)
            return True
        return self.resource(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> bool:
        return self.resource(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self.resource(node)

    def import_module(self, node: cst.Call) -> None:
        args = {a.keyword.value if a.keyword else i: a.value for i, a in enumerate(node.args)}
        name = args.get(0, args.get("name"))
        anchor = args.get(1, args.get("package"))
        package = literal(anchor) if anchor is not None else None
        here = anchor is None or _is_here(anchor)
        for target in self.values(name):
            if target.startswith(".") and package is None and not (here and anchor is not None):
                self.dynamic(node, "import_module() of a relative name without a literal package", None, 0, None)
                continue
            module = target.lstrip(".")
            self.fact(node, module, (), len(target) - len(module), "import_module", package)
        if not self.values(name):
            head = literal_head(name)
            level = len(head) - len(head.lstrip(".")) if head else 0
            anchored = level == 0 or package is not None or (here and anchor is not None)
            self.dynamic(node, "import_module() of a non-literal name", head if anchored else None, level, package)

    def dunder_import(self, node: cst.Call) -> None:
        args = {a.keyword.value if a.keyword else i: a.value for i, a in enumerate(node.args)}
        name = args.get(0, args.get("name"))
        fromlist = args.get(3, args.get("fromlist"))
        names: tuple[str, ...] | None = ()
        if fromlist is not None:
            elements = getattr(fromlist, "elements", None)
            found = [literal(e.value) for e in elements] if elements is not None else [None]
            names = tuple(str(n) for n in found) if None not in found else None
        level_node = args.get(4, args.get("level"))
        level = int(level_node.value) if isinstance(level_node, cst.Integer) else 0
        targets = self.values(name)
        if not targets or names is None or (level_node is not None and not isinstance(level_node, cst.Integer)):
            head = literal_head(name) if level_node is None else None
            self.dynamic(node, "__import__() of a non-literal name", head, 0, None)
            return
        for target in targets:
            self.fact(node, target, names, level, "__import__", None)

    def values(self, node: Any) -> tuple[str, ...]:
        """The literal strings `node` can be: itself, or the loop variable of `for x in ("a", "b")`."""
        value = literal(node)
        if value is not None:
            return (value,)
        if isinstance(node, cst.Name):
            for name, values in reversed(self.ctx.loops):
                if name == node.value:
                    return values
        return ()

    def fact(self, node: Any, module: str, names: tuple[str, ...], level: int, kind: str, package: str | None) -> None:
        ctx = self.ctx

        def make(line: int, col: int) -> ImportFact:
            return ImportFact(module, names, level, line, col, kind, ctx.in_function, ctx.optional, ctx.type_checking,
                              package, ctx.conditional)

        self.walker.add(node, make)

    def dynamic(self, node: Any, what: str, prefix: str | None, level: int, package: str | None) -> None:
        if self.ctx.type_checking:
            return
        optional = self.ctx.optional
        if prefix is not None and level:
            prefix = prefix[level:]

        def make(line: int, col: int) -> DynamicSite:
            return DynamicSite(line, col, what, prefix, level, package, optional)

        self.walker.add(node, make)

    def resource(self, node: Any) -> bool:
        path = path_of(node, self.walker.aliases)
        if path is None:
            return True
        if path.anchor == FILE and path.literal:
            return False  # the file itself, e.g. Path(__file__).resolve()
        if path.literal and all(p == ".." for p in path.parts) and path.anchor is None:
            return False  # a directory of this file (Path(__file__).parent): not a resource by itself
        if not path.literal or not path.parts:
            message = f"resource path is not a literal; {_DATA_HINT}"
            self.walker.add(node, lambda line, col: Problem("resource", message, line, col))
            return False
        optional = self.ctx.optional

        def make(line: int, col: int) -> ResourceFact:
            return ResourceFact(path.anchor, path.parts, line, col, optional)

        self.walker.add(node, make)
        return False


def _is_here(anchor: Any) -> bool:
    """`__package__`, `__name__`, `__spec__.parent`: the module's own package."""
    if isinstance(anchor, cst.Name):
        return anchor.value in ("__package__", "__name__", "__spec__")
    return isinstance(anchor, cst.Attribute) and isinstance(anchor.value, cst.Name) and anchor.value.value == "__spec__"


def _path_prefix(node: cst.Call, aliases: dict[str, str]) -> str | None:
    """`pkgutil.iter_modules(app.plugins.__path__)` -> "app.plugins." (its modules' common head)."""
    if node.args and isinstance(node.args[0].value, cst.Attribute) and node.args[0].value.attr.value == "__path__":
        base = qualname(node.args[0].value.value, aliases)
        return f"{base}." if base else None
    return None
