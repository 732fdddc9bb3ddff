"""The `calculator` tool: arithmetic by walking a whitelisted `ast`, never `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from .errors import ToolExecutionError
from .registry import Tool, tool

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 1000
MAX_INT_BITS = 4096

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _check_size(value: int | float) -> int | float:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolExecutionError(f"result too large (over {MAX_INT_BITS} bits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolExecutionError("result is not a finite number")
    return value


def _walk(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _walk(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check_size(_UNARY[type(node.op)](_walk(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _walk(node.left), _walk(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolExecutionError(f"exponent {right} is too large (limit {MAX_EXPONENT})")
        if (
            isinstance(node.op, ast.Pow)
            and isinstance(left, int)
            and left.bit_length() * right > MAX_INT_BITS
        ):
            raise ToolExecutionError(f"result too large (over {MAX_INT_BITS} bits)")
        try:
            return _check_size(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ToolExecutionError("division by zero") from None
        except OverflowError:
            raise ToolExecutionError("result is too large for a float") from None
    raise ToolExecutionError(
        f"unsupported syntax {type(node).__name__!s}: use numbers, + - * / // % ** and parentheses"
    )


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression, or ToolExecutionError saying what is not allowed."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolExecutionError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolExecutionError(f"cannot parse {expression!r}: {exc.msg}") from None
    result = _walk(tree)
    if isinstance(result, complex):  # (-8) ** 0.5
        raise ToolExecutionError("result is not a real number")
    return result


def _calculator(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result.

    Args:
        expression: Arithmetic with numbers, + - * / // % ** and parentheses, e.g. "(2 + 3) * 4".
    """
    return str(evaluate(expression))


EXPRESSION_PATTERN = r"^[0-9+\-*/%(). eE]+$"


def _with_pattern(base: Tool) -> Tool:
    """The generated tool, its `expression` limited to what an arithmetic expression can contain
    (constrained decoding then cannot wander off into prose inside the string)."""
    props = {**base.parameters["properties"]}
    props["expression"] = {**props["expression"], "pattern": EXPRESSION_PATTERN}
    return Tool(base.name, base.description, {**base.parameters, "properties": props}, base.fn)


calculator = _with_pattern(tool(_calculator, name="calculator"))
