"""Scan one Python file's text into import/resource facts with libcst (pure: text in, facts out)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..facts import DynamicSite, Facts, ImportFact, Problem, ResourceFact
from .opens import opens_names
from .syntax import cpython_syntax_error

# Only files mentioning one of these can hold a dynamic import or a resource path; the others
# are walked statement by statement, which is far cheaper than visiting every expression.
_HINTS = ("import_module", "__import__", "importlib", "iter_modules", "walk_packages", "__file__", "resources")
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
TARGET = (sys.version_info[0], sys.version_info[1])
_RECURSION = 12_000


@dataclass(frozen=True)
class _Ctx:
    in_function: bool = False
    # in a class body: runs at import time, but binds no module-level names
    in_class: bool = False
    optional: bool = False
    type_checking: bool = False
    # under an `if` whose test the scan cannot decide
    conditional: bool = False
    # names a `for NAME in ("a", "b"):` around this statement binds to string literals
    loops: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


def scan(text: str, target: tuple[int, int] = TARGET) -> Facts:
    """The facts of one module's source text for Python `target`; a syntax error becomes a
    Problem at the line and column CPython reports, not an exception."""
    import libcst as cst

    from .positions import locate

    error = cpython_syntax_error(text)
    if error is not None:
        return Facts(problems=(error,))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION))  # libcst recurses per nesting level (a.b.c... included)
    try:
        module = cst.parse_module(text)
        walker = _Walker(cst, any(hint in text for hint in _HINTS), target)
        walker.block(module.body, _Ctx())
        where = locate(module, [node for node, _ in walker.pending])
    except (cst.ParserSyntaxError, RecursionError) as exc:
        what = "too deeply nested to scan" if isinstance(exc, RecursionError) else f"libcst cannot parse it: {exc.message}"
        return Facts(problems=(Problem("syntax", what, 1, 1),))
    finally:
        sys.setrecursionlimit(limit)
    made = [make(*where[id(node)]) for node, make in walker.pending]
    return Facts(
        imports=tuple(f for f in made if isinstance(f, ImportFact)),
        resources=tuple(f for f in made if isinstance(f, ResourceFact)),
        problems=tuple(f for f in made if isinstance(f, Problem)),
        dynamic=tuple(f for f in made if isinstance(f, DynamicSite)),
        all_names=walker.all_names,
        bindings=frozenset(walker.bindings),
        open_names="__getattr__" in walker.bindings or opens_names(text),
    )


class _Walker:
    """Walks statements in document order, keeping import aliases, bindings and the import context."""

    def __init__(self, cst: Any, hinted: bool, target: tuple[int, int]) -> None:
        self.cst = cst
        self.hinted = hinted
        self.target = target
        self.aliases: dict[str, str] = {}
        self.pending: list[tuple[Any, Callable[[int, int], Any]]] = []
        self.all_names: tuple[str, ...] | None = None
        self.bindings: set[str] = set()
        # module-level names holding a decided version test (`PY311 = sys.version_info >= (3, 11)`)
        self.known: dict[str, bool] = {}

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
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self.bind(stmt.name.value, ctx)  # a module-level `def import_module` shadows importlib's
            function = isinstance(stmt, cst.FunctionDef)
            self.suite(stmt.body, replace(ctx, in_function=ctx.in_function or function, in_class=not function))
        elif isinstance(stmt, cst.If):
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
            inner = ctx
            if isinstance(stmt, cst.For):
                self.targets(stmt.target, ctx)
                values = _string_list(stmt.iter)
                if isinstance(stmt.target, cst.Name) and values:
                    inner = replace(ctx, loops=ctx.loops + ((stmt.target.value, values),))
            elif isinstance(stmt, cst.With):
                for item in stmt.items:
                    if item.asname is not None:
                        self.targets(item.asname.name, ctx)
            self.suite(stmt.body, inner)
            orelse = getattr(stmt, "orelse", None)
            if orelse is not None:
                self.suite(orelse.body, ctx)

    def if_(self, stmt: Any, ctx: _Ctx) -> None:
        from .versions import decide

        guarded = _names(stmt.test) == {"TYPE_CHECKING"}
        live = None if guarded else decide(stmt.test, self.target, self.aliases, self.known)
        branch = ctx if live is not None or guarded else replace(ctx, conditional=True)
        if live is not False:
            self.suite(stmt.body, replace(ctx, type_checking=True) if guarded else branch)
        if live is True:
            return
        orelse = stmt.orelse
        if isinstance(orelse, self.cst.If):
            self.compound(orelse, branch)
        elif orelse is not None:
            self.suite(orelse.body, branch)

    def small(self, stmt: Any, ctx: _Ctx) -> None:
        cst = self.cst
        if isinstance(stmt, cst.Import):
            self.import_(stmt, ctx)
        elif isinstance(stmt, cst.ImportFrom):
            self.import_from(stmt, ctx)
        else:
            if isinstance(stmt, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                self.assign(stmt, ctx)
            elif isinstance(stmt, cst.Global):
                for name in stmt.names:
                    self.bindings.add(name.name.value)
            if self.hinted:
                self.exprs(stmt, ctx)

    def add(self, node: Any, make: Callable[[int, int], Any]) -> None:
        self.pending.append((node, make))

    def bind(self, name: str, ctx: _Ctx) -> None:
        if not (ctx.in_function or ctx.in_class):
            self.aliases.pop(name, None)
            if not ctx.type_checking:
                self.bindings.add(name)

    def targets(self, target: Any, ctx: _Ctx) -> None:
        """Bind every plain name of an assignment target (tuples, lists and starred included)."""
        cst = self.cst
        if isinstance(target, cst.Name):
            self.bind(target.value, ctx)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.targets(element.value, ctx)
        elif isinstance(target, cst.StarredElement):
            self.targets(target.value, ctx)

    def import_(self, stmt: Any, ctx: _Ctx) -> None:
        for alias in stmt.names:
            name = _dotted(alias.name)
            bound = _dotted(alias.asname.name) if alias.asname else name.split(".")[0]
            self.bind(bound, ctx)
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
                bound = _dotted(alias.asname.name) if alias.asname else _dotted(alias.name)
                self.bind(bound, ctx)
                if level == 0:
                    self.aliases[bound] = f"{module}.{_dotted(alias.name)}"
        self.add(stmt, _fact(module, names, level, "from", ctx))

    def assign(self, stmt: Any, ctx: _Ctx) -> None:
        from .exprs import qualname
        from .versions import decide

        cst = self.cst
        targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        value = stmt.value
        if value is None:
            return  # `x: int` alone binds nothing at run time
        for target in targets:
            self.targets(target, ctx)
            if not isinstance(target, cst.Name):
                continue
            if target.value == "__all__" and not ctx.in_function:
                found = _string_list(value)
                if isinstance(stmt, cst.AugAssign) and found is not None and self.all_names is not None:
                    found = self.all_names + found
                self.all_names = found
                continue
            name = qualname(value, self.aliases) if isinstance(value, (cst.Name, cst.Attribute)) else None
            if name and name.startswith(("importlib", "os", "pathlib", "pkgutil")):
                self.aliases[target.value] = name
            if not (ctx.in_function or ctx.in_class):
                decided = decide(value, self.target, self.aliases, self.known)
                if decided is not None:
                    self.known[target.value] = decided

    def exprs(self, node: Any, ctx: _Ctx) -> None:
        from .calls import CallFinder

        node.visit(CallFinder(self, ctx))


def _fact(module: str, names: tuple[str, ...], level: int, kind: str, ctx: _Ctx, package: str | None = None):
    def make(line: int, col: int) -> ImportFact:
        return ImportFact(
            module, names, level, line, col, kind, ctx.in_function, ctx.optional, ctx.type_checking, package,
            ctx.conditional,
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
