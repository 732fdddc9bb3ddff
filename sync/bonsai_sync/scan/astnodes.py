"""Values astscan reads from CPython `ast` nodes as libcst's walker reads the same source (names, literals,
qualified names); `Fallback` where the two readings could differ."""

from __future__ import annotations

import ast
from typing import Any


class Fallback(Exception):
    """A construct whose libcst reading astscan does not reproduce: let libcst scan the file."""


def qualname(expr: Any, aliases: dict[str, str]) -> str | None:
    if isinstance(expr, ast.Name):
        return aliases.get(expr.id, expr.id)
    if isinstance(expr, ast.Attribute):
        base = qualname(expr.value, aliases)
        return f"{base}.{expr.attr}" if base else None
    return None


def int_of(node: Any) -> int | None:
    """An int literal (libcst's Integer: never a bool, never signed)."""
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def ints_of(node: ast.expr) -> tuple[int, ...] | int | None:
    number = int_of(node)
    if number is not None:
        return number
    if isinstance(node, ast.Tuple):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise Fallback  # libcst reads `*3` as its value
        values = [int_of(e) for e in node.elts]
        if all(v is not None for v in values):
            return tuple(v for v in values if v is not None)
    return None


def names_of(node: Any) -> set[str]:
    """`walker._names`: libcst's bare names of a test or except clause, where a libcst node's `value`
    that is a string is its token (a number's digits, a string's quotes: never a bare name)."""
    if node is None:
        return set()
    if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        elements = node.values if isinstance(node, ast.Dict) else node.elts
        return set().union(*(names_of(e.value if isinstance(e, ast.Starred) else e) for e in elements))
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            return set()
        if isinstance(node.value, (str, bytes)):
            raise Fallback  # "a" "b" is one token in ast, a pair (with no `value`) in libcst
        return {repr(node.value)}  # True, None, 3: one token each, never an identifier's text below
    return set()


def string_list(node: ast.expr) -> tuple[str, ...] | None:
    """`walker._string_list`: the literal strings of a tuple/list/set (a dict's values)."""
    if isinstance(node, ast.Dict):
        elements = list(node.values)  # libcst: a DictElement's value, a `**x` element's x
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        elements = [e.value if isinstance(e, ast.Starred) else e for e in node.elts]
    else:
        return None
    values = [literal(e) for e in elements]
    return tuple(v for v in values if v is not None) if all(v is not None for v in values) else None


def literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

