"""Scan one Python file's text into import/resource facts with libcst (pure: text in, facts out)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .facts import Facts, ImportFact, Problem, ResourceFact

# Only files mentioning one of these can hold a dynamic import or a resource path; the others
# are walked statement by statement, which is far cheaper than visiting every expression.
_HINTS = ("import_module", "__import__", "importlib", "exec(", "iter_modules", "walk_packages", "__file__", "resources")
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


@dataclass(frozen=True)
class _Ctx:
    in_function: bool = False
    optional: bool = False
    type_checking: bool = False


def scan(text: str) -> Facts:
    """The facts of one module's source text; a syntax error becomes a Problem, not an exception."""
    import libcst as cst

    from .positions import locate

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return Facts(problems=(Problem("syntax", f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1),))
    walker = _Walker(cst, any(hint in text for hint in _HINTS))
    walker.block(module.body, _Ctx())
    where = locate(module, [node for node, _ in walker.pending])
    made = [make(*where[id(node)]) for node, make in walker.pending]
    return Facts(
        imports=tuple(f for f in made if isinstance(f, ImportFact)),
        resources=tuple(f for f in made if isinstance(f, ResourceFact)),
        problems=tuple(f for f in made if isinstance(f, Problem)),
        all_names=walker.all_names,
    )


class _Walker:
    """Walks statements in document order, keeping import aliases and the import context."""

    def __init__(self, cst: Any, hinted: bool) -> None:
        self.cst = cst
        self.hinted = hinted
        self.aliases: dict[str, str] = {}
        self.pending: list[tuple[Any, Callable[[int, int], Any]]] = []
        self.all_names: tuple[str, ...] | None = None

    def block(self, body: Any, ctx: _Ctx) -> None:
        cst = self.cst
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small(small, ctx)
            else:
                self.compound(stmt, ctx)

    def suite(self, suite: Any, ctx: _Ctx) -> None:
        if isinstance(suite, self.cst.SimpleStatementSuite):
            for small in suite.body:
                self.small(small, ctx)
        else:
            self.block(suite.body, ctx)

    def compound(self, stmt: Any, ctx: _Ctx) -> None:
        cst = self.cst
        if self.hinted:
            self.exprs(stmt, ctx)
        if isinstance(stmt, cst.If):
            self.if_(stmt, ctx)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            catches = any(_names(h.type) & _IMPORT_ERRORS for h in stmt.handlers)
            self.suite(stmt.body, replace(ctx, optional=ctx.optional or catches))
            for handler in stmt.handlers:
                self.suite(handler.body, ctx)
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None:
                    self.suite(extra.body, ctx)
        elif isinstance(stmt, cst.Match):
            for case in stmt.cases:
                self.suite(case.body, ctx)
        else:
            inner = replace(ctx, in_function=True) if isinstance(stmt, cst.FunctionDef) else ctx
            self.suite(stmt.body, inner)
            orelse = getattr(stmt, "orelse", None)
            if orelse is not None:
                self.suite(orelse.body, ctx)

    def if_(self, stmt: Any, ctx: _Ctx) -> None:
        guarded = _names(stmt.test) == {"TYPE_CHECKING"}
        self.suite(stmt.body, replace(ctx, type_checking=True) if guarded else ctx)
        orelse = stmt.orelse
        if isinstance(orelse, self.cst.If):
            self.compound(orelse, ctx)
        elif orelse is not None:
            self.suite(orelse.body, ctx)

    def small(self, stmt: Any, ctx: _Ctx) -> None:
        cst = self.cst
        if isinstance(stmt, cst.Import):
            self.import_(stmt, ctx)
        elif isinstance(stmt, cst.ImportFrom):
            self.import_from(stmt, ctx)
        else:
            if isinstance(stmt, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                self.assign(stmt, ctx)
            if self.hinted:
                self.exprs(stmt, ctx)

    def add(self, node: Any, make: Callable[[int, int], Any]) -> None:
        self.pending.append((node, make))

    def import_(self, stmt: Any, ctx: _Ctx) -> None:
        for alias in stmt.names:
            name = _dotted(alias.name)
            bound = _dotted(alias.asname.name) if alias.asname else name.split(".")[0]
            self.aliases[bound] = name if alias.asname else bound
            self.add(stmt, _fact(name, (), 0, "import", ctx))

    def import_from(self, stmt: Any, ctx: _Ctx) -> None:
        module = _dotted(stmt.module) if stmt.module is not None else ""
        level = len(stmt.relative)
        if isinstance(stmt.names, self.cst.ImportStar):
            names: tuple[str, ...] = ("*",)
        else:
            names = tuple(_dotted(a.name) for a in stmt.names)
            for alias in stmt.names:
                if level == 0:
                    bound = _dotted(alias.asname.name) if alias.asname else _dotted(alias.name)
                    self.aliases[bound] = f"{module}.{_dotted(alias.name)}"
        self.add(stmt, _fact(module, names, level, "from", ctx))

    def assign(self, stmt: Any, ctx: _Ctx) -> None:
        from .exprs import qualname

        cst = self.cst
        targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        value = stmt.value
        for target in targets:
            if not isinstance(target, cst.Name) or value is None:
                continue
            if target.value == "__all__" and not ctx.in_function:
                found = _string_list(value)
                if isinstance(stmt, cst.AugAssign) and found is not None and self.all_names is not None:
                    found = self.all_names + found
                self.all_names = found
            elif isinstance(value, (cst.Name, cst.Attribute)):
                name = qualname(value, self.aliases)
                if name and name.startswith(("importlib", "os", "pathlib", "pkgutil")):
                    self.aliases[target.value] = name

    def exprs(self, node: Any, ctx: _Ctx) -> None:
        from .scan_calls import CallFinder

        node.visit(CallFinder(self, ctx))


def _fact(module: str, names: tuple[str, ...], level: int, kind: str, ctx: _Ctx, package: str | None = None):
    def make(line: int, col: int) -> ImportFact:
        return ImportFact(
            module, names, level, line, col, kind, ctx.in_function, ctx.optional, ctx.type_checking, package
        )

    return make


def _dotted(node: Any) -> str:
    if hasattr(node, "attr"):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return str(node.value)


def _names(node: Any) -> set[str]:
    """Bare names of a test or an except clause: `TYPE_CHECKING`, `typing.TYPE_CHECKING`, tuples."""
    if node is None:
        return set()
    if hasattr(node, "elements"):
        return set().union(*(_names(e.value) for e in node.elements))
    if hasattr(node, "attr"):
        return {node.attr.value}
    value = getattr(node, "value", None)
    return {value} if isinstance(value, str) else set()


def _string_list(node: Any) -> tuple[str, ...] | None:
    from .exprs import literal

    elements = getattr(node, "elements", None)
    if elements is None:
        return None
    values = [literal(e.value) for e in elements]
    return tuple(v for v in values if v is not None) if all(v is not None for v in values) else None
