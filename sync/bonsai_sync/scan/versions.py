"""Decide `sys.version_info` tests (`>= (3, 11)`, `[:2] < (3, 9)`, `.minor`, `not`, `and`) for a target Python."""

from __future__ import annotations

import operator
from typing import Any

import libcst as cst

from .exprs import qualname
from .vcompare import settle

_OPS: dict[type, Any] = {
    cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
}


def decide(test: Any, target: tuple[int, int], aliases: dict[str, str], known: dict[str, bool]) -> bool | None:
    """True or False when `test` is decided by the Python version alone, else None (both branches live)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = decide(test.expression, target, aliases, known)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left = decide(test.left, target, aliases, known)
        right = decide(test.right, target, aliases, known)
        if isinstance(test.operator, cst.And):
            return False if False in (left, right) else (True if left and right else None)
        return True if True in (left, right) else (False if left is False and right is False else None)
    if isinstance(test, cst.Name) and test.value in known:
        return known[test.value]
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _compare(test.left, test.comparisons[0], target, aliases)
    return None


def _compare(left: Any, target_op: Any, target: tuple[int, int], aliases: dict[str, str]) -> bool | None:
    op = _OPS.get(type(target_op.operator))
    mine = _version_value(left, target, aliases)
    other = _ints(target_op.comparator)
    if op is None or mine is None or other is None:
        return None
    return settle(op, mine, other, target)


def _version_value(node: Any, target: tuple[int, int], aliases: dict[str, str]) -> Any:
    """`"full"` for sys.version_info, a tuple for a slice of it, an int for one field; None otherwise."""
    if qualname(node, aliases) == "sys.version_info":
        return "full"
    if isinstance(node, cst.Attribute) and qualname(node.value, aliases) == "sys.version_info":
        return {"major": target[0], "minor": target[1]}.get(node.attr.value)
    if isinstance(node, cst.Subscript) and qualname(node.value, aliases) == "sys.version_info" and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            return target[int(index.value.value, 0)] if int(index.value.value, 0) < 2 else None
        if isinstance(index, cst.Slice) and index.lower is None and index.step is None and isinstance(index.upper, cst.Integer):
            stop = int(index.upper.value)
            return target[:stop] if stop <= 2 else None
    return None


def _ints(node: Any) -> tuple[int, ...] | int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.Tuple):
        values = [e.value for e in node.elements]
        if all(isinstance(v, cst.Integer) for v in values):
            return tuple(int(v.value, 0) for v in values if isinstance(v, cst.Integer))
    return None
