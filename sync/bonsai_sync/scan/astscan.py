"""The libcst walker's facts from CPython's `ast` for the files it can read exactly (no dynamic-import or
resource hint); None for the others, which libcst scans. Proven equal by tests/sync/test_sync_astscan.py."""

from __future__ import annotations

import ast
import operator
import warnings
from typing import Any

from ..facts import Facts, ImportFact
from .astnodes import Fallback, int_of, ints_of, names_of, qualname, string_list
from .opens import opens_names
from .vcompare import settle
from .walker import _HINTS, _IMPORT_ERRORS, _Ctx

# deeper trees go to libcst, which then fails or not exactly as it always did (it recurses per level)
MAX_DEPTH = 100
_OPS: dict[type, Any] = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le,
                         ast.Eq: operator.eq, ast.NotEq: operator.ne}


def scan_ast(text: str, target: tuple[int, int]) -> Facts | None:
    """The facts `walker.scan` gives for `text`, or None when this file needs libcst."""
    if any(hint in text for hint in _HINTS) or text.count("\r") != text.count("\r\n"):
        return None  # expressions are visited (libcst positions), or lines end in a lone CR
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None  # libcst's scan reports the same CPython error
    if _depth(tree) > MAX_DEPTH:
        return None
    walker = _Walker(text, target)
    try:
        walker.block(tree.body, _Ctx())
    except Fallback:
        return None
    return Facts(imports=tuple(walker.imports), all_names=walker.all_names, bindings=frozenset(walker.bindings),
                 open_names="__getattr__" in walker.bindings or opens_names(text, tree))


def _depth(tree: ast.AST) -> int:
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


class _Walker:
    """`walker._Walker` over ast statements (the unhinted path: statements only, never expressions)."""

    def __init__(self, text: str, target: tuple[int, int]) -> None:
        self.text = text
        self.lines = None if text.isascii() else text.split("\n")
        self.target = target
        self.aliases: dict[str, str] = {}
        self.imports: list[ImportFact] = []
        self.all_names: tuple[str, ...] | None = None
        self.bindings: set[str] = set()
        self.known: dict[str, bool] = {}

    def col(self, node: ast.stmt) -> int:
        """libcst's 1-based column: code points, where ast counts UTF-8 bytes."""
        if self.lines is None:
            return node.col_offset + 1
        return len(self.lines[node.lineno - 1].encode("utf-8")[: node.col_offset].decode("utf-8")) + 1

    def block(self, body: list[ast.stmt], ctx: _Ctx) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                self.import_(stmt, ctx)
            elif isinstance(stmt, ast.ImportFrom):
                self.import_from(stmt, ctx)
            elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                self.assign(stmt, ctx)
            elif isinstance(stmt, ast.Global):
                self.bindings.update(stmt.names)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bind(stmt.name, ctx)
                function = not isinstance(stmt, ast.ClassDef)
                self.block(stmt.body, _with(ctx, in_function=ctx.in_function or function, in_class=not function))
            elif isinstance(stmt, ast.If):
                self.if_(stmt, ctx)
            elif isinstance(stmt, (ast.Try, ast.TryStar)):
                catches = any(names_of(h.type) & _IMPORT_ERRORS for h in stmt.handlers)
                self.block(stmt.body, _with(ctx, optional=ctx.optional or catches))
                for handler in stmt.handlers:
                    self.block(handler.body, ctx)
                self.block(stmt.orelse, ctx)
                self.block(stmt.finalbody, ctx)
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    self.block(case.body, ctx)
            elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                self.targets(stmt.target, ctx)
                values = string_list(stmt.iter)
                inner = _with(ctx, loops=ctx.loops + ((stmt.target.id, values),)) if (
                    isinstance(stmt.target, ast.Name) and values) else ctx
                self.block(stmt.body, inner)
                self.block(stmt.orelse, ctx)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        self.targets(item.optional_vars, ctx)
                self.block(stmt.body, ctx)
            elif isinstance(stmt, ast.While):
                self.block(stmt.body, ctx)
                self.block(stmt.orelse, ctx)

    def if_(self, stmt: ast.If, ctx: _Ctx) -> None:
        guarded = names_of(stmt.test) == {"TYPE_CHECKING"}
        live = None if guarded else self.decide(stmt.test)
        branch = ctx if live is not None or guarded else _with(ctx, conditional=True)
        if live is not False:
            self.block(stmt.body, _with(ctx, type_checking=True) if guarded else branch)
        if live is True:
            return
        self.block(stmt.orelse, branch)  # `elif` and `else: if` read alike in libcst's walker too

    def bind(self, name: str, ctx: _Ctx) -> None:
        if not (ctx.in_function or ctx.in_class):
            self.aliases.pop(name, None)
            if not ctx.type_checking:
                self.bindings.add(name)

    def targets(self, target: ast.expr, ctx: _Ctx) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, ctx)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.targets(element, ctx)
        elif isinstance(target, ast.Starred):
            self.targets(target.value, ctx)

    def fact(self, stmt: ast.stmt, module: str, names: tuple[str, ...], level: int, kind: str, ctx: _Ctx) -> None:
        self.imports.append(ImportFact(module, names, level, stmt.lineno, self.col(stmt), kind, ctx.in_function,
                                       ctx.optional, ctx.type_checking, None, ctx.conditional))

    def import_(self, stmt: ast.Import, ctx: _Ctx) -> None:
        for alias in stmt.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.bind(bound, ctx)
            self.aliases[bound] = alias.name if alias.asname else bound
            self.fact(stmt, alias.name, (), 0, "import", ctx)

    def import_from(self, stmt: ast.ImportFrom, ctx: _Ctx) -> None:
        module = stmt.module or ""
        if len(stmt.names) == 1 and stmt.names[0].name == "*":
            names: tuple[str, ...] = ("*",)
        else:
            names = tuple(a.name for a in stmt.names)
            for alias in stmt.names:
                bound = alias.asname or alias.name
                self.bind(bound, ctx)
                if stmt.level == 0:
                    self.aliases[bound] = f"{module}.{alias.name}"
        self.fact(stmt, module, names, stmt.level, "from", ctx)

    def assign(self, stmt: ast.Assign | ast.AugAssign | ast.AnnAssign, ctx: _Ctx) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        if value is None:
            return
        for target in targets:
            self.targets(target, ctx)
            if not isinstance(target, ast.Name):
                continue
            if target.id == "__all__" and not ctx.in_function:
                found = string_list(value)
                if isinstance(stmt, ast.AugAssign) and found is not None and self.all_names is not None:
                    found = self.all_names + found
                self.all_names = found
                continue
            name = qualname(value, self.aliases) if isinstance(value, (ast.Name, ast.Attribute)) else None
            if name and name.startswith(("importlib", "os", "pathlib", "pkgutil")):
                self.aliases[target.id] = name
            if not (ctx.in_function or ctx.in_class):
                decided = self.decide(value)
                if decided is not None:
                    self.known[target.id] = decided

    def decide(self, test: ast.expr) -> bool | None:
        """`versions.decide`: Kleene logic over version tests (libcst nests `a and b and c` pairwise)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.decide(test.operand)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            values = [self.decide(v) for v in test.values]
            if isinstance(test.op, ast.And):
                return False if False in values else (True if all(v is True for v in values) else None)
            return True if True in values else (False if all(v is False for v in values) else None)
        if isinstance(test, ast.Name) and test.id in self.known:
            return self.known[test.id]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self.compare(test.left, test.ops[0], test.comparators[0])
        return None

    def compare(self, left: ast.expr, op_node: ast.cmpop, right: ast.expr) -> bool | None:
        op = _OPS.get(type(op_node))
        mine = self.version_value(left)
        other = ints_of(right)
        if op is None or mine is None or other is None:
            return None
        return settle(op, mine, other, self.target)

    def version_value(self, node: ast.expr) -> Any:
        if qualname(node, self.aliases) == "sys.version_info":
            return "full"
        if isinstance(node, ast.Attribute) and qualname(node.value, self.aliases) == "sys.version_info":
            return {"major": self.target[0], "minor": self.target[1]}.get(node.attr)
        if isinstance(node, ast.Subscript) and qualname(node.value, self.aliases) == "sys.version_info":
            index = node.slice
            if isinstance(index, ast.Tuple):
                raise Fallback  # `[0,]` is one libcst element, `[0, 1]` two: ast cannot tell `[0,]` from `[(0,)]`
            number = int_of(index)
            if number is not None:
                return self.target[number] if number < 2 else None
            upper = index.upper if isinstance(index, ast.Slice) and index.lower is None and index.step is None else None
            if upper is not None and int_of(upper) is not None:
                token = ast.get_source_segment(self.text, upper) or ""
                if token.strip("0123456789_"):
                    raise Fallback  # libcst reads the stop with int(text): `0x2` is an error there
                stop = int(token)
                return self.target[:stop] if stop <= 2 else None
        return None


def _with(ctx: _Ctx, **changes: Any) -> _Ctx:
    from dataclasses import replace

    return replace(ctx, **changes)
