"""The verifier's own reading of a module (ast, no code shared with the scanner): its runtime
imports, with `if TYPE_CHECKING:`, `try/except ImportError` and other Pythons' branches skipped."""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterator
from typing import Any

_OPS = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}
Site = tuple[ast.stmt | ast.Call, list[str], bool]


def imports_of(module: ast.Module, package: list[str], python: tuple[int, int], data: bytes) -> Iterator[Site]:
    """(node, [absolute module names], lazy: in a function or under an undecided `if`) for every runtime import, literal
    `importlib.import_module("x")` / `__import__("x")` calls included."""
    reader = _Reader(package, python)
    yield from reader.body(module.body, False)
    if b"import_module" in data or b"__import__" in data:
        importers = _importers(module)
        guarded = [(t.body[0].lineno, t.body[-1].end_lineno or t.body[-1].lineno) for t in ast.walk(module)
                   if isinstance(t, ast.Try | ast.TryStar) and any(_catches_import_error(h) for h in t.handlers)]
        for node in ast.walk(module):
            if any(a <= getattr(node, "lineno", 0) <= b for a, b in guarded):
                continue
            if isinstance(node, ast.Call) and _called(node.func, importers) and node.args:
                value = node.args[0]
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and not value.value.startswith("."):
                    yield node, [value.value], True


def _importers(module: ast.Module) -> set[str]:
    """Names that mean importlib's import_module here: `importlib.import_module` through `import
    importlib [as x]`, `from importlib import import_module [as y]`, and `__import__`, unless a
    module-level def or assignment rebinds them."""
    names = {"__import__"}
    for node in module.body:
        if isinstance(node, ast.Import):
            names |= {f"{a.asname or a.name}.import_module" for a in node.names if a.name == "importlib"}
        elif isinstance(node, ast.ImportFrom) and node.module == "importlib" and node.level == 0:
            names |= {a.asname or a.name for a in node.names if a.name == "import_module"}
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.discard(node.name)
        elif isinstance(node, ast.Assign):
            names -= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _called(func: ast.expr, importers: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in importers
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and f"{func.value.id}.{func.attr}" in importers


class _Reader:
    def __init__(self, package: list[str], python: tuple[int, int]) -> None:
        self.package = package
        self.python = python
        self.known: dict[str, bool] = {}

    def body(self, body: list[ast.stmt], lazy: bool) -> Iterator[Site]:
        for node in body:
            if isinstance(node, ast.Import):
                yield node, [a.name for a in node.names], lazy
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node.module or "", node.level, self.package)
                yield node, [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"], lazy
            elif isinstance(node, ast.If):
                yield from self.if_(node, lazy)
            elif isinstance(node, ast.Try | ast.TryStar):
                if not any(_catches_import_error(h) for h in node.handlers):
                    yield from self.body(node.body, lazy)
                for handler in node.handlers:
                    yield from self.body(handler.body, lazy)
                yield from self.body(node.orelse + node.finalbody, lazy)
            elif isinstance(node, ast.Match):
                for case in node.cases:
                    yield from self.body(case.body, lazy)
            else:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    decided = self.decide(node.value)
                    if decided is not None and not lazy:
                        self.known[node.targets[0].id] = decided
                inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                yield from self.body(getattr(node, "body", []), inner)
                yield from self.body(getattr(node, "orelse", []), inner)

    def if_(self, node: ast.If, lazy: bool) -> Iterator[Site]:
        if "TYPE_CHECKING" in ast.unparse(node.test).split("."):
            yield from self.body(node.orelse, lazy)
            return
        live = self.decide(node.test)
        lazy = lazy or live is None
        if live is not False:
            yield from self.body(node.body, lazy)
        if live is not True:
            yield from self.body(node.orelse, lazy)

    def decide(self, test: ast.expr) -> bool | None:
        """A `sys.version_info` test decided for the target Python, or None."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.decide(test.operand)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            decided = [self.decide(v) for v in test.values]
            if isinstance(test.op, ast.And):
                return False if False in decided else (True if all(v is True for v in decided) else None)
            return True if True in decided else (False if all(v is False for v in decided) else None)
        if isinstance(test, ast.Name):
            return self.known.get(test.id)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS):
            return None
        try:
            other = ast.literal_eval(test.comparators[0])
        except ValueError:
            return None
        source = ast.unparse(test.left).replace(" ", "")
        values: dict[str, Any] = {"sys.version_info[:2]": self.python, "sys.version_info[0]": self.python[0],
                  "sys.version_info[1]": self.python[1], "sys.version_info.major": self.python[0],
                  "sys.version_info.minor": self.python[1], "sys.version_info[:1]": self.python[:1]}
        op = _OPS[type(test.ops[0])]
        if source == "sys.version_info" and isinstance(other, tuple):
            if tuple(other[:2]) != self.python:
                return bool(op(self.python, tuple(other[:2])))
            return bool(op((1,), ())) if len(other) <= 2 else None
        if source in values and type(values[source]) is type(other):
            return bool(op(values[source], other))
        return None


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    return handler.type is not None and any(n in ast.unparse(handler.type) for n in ("ImportError", "ModuleNotFoundError"))


def _absolute(module: str, level: int, package: list[str]) -> str:
    base = package[: len(package) - (level - 1)] if level else []
    return ".".join(base + ([module] if module else []))
