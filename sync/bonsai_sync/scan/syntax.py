"""Syntax errors as CPython reports them: its own parser decides, with its line, column and message."""

from __future__ import annotations

import ast
import warnings

from .facts import Problem


def cpython_syntax_error(text: str) -> Problem | None:
    """A "syntax" Problem at CPython's line and column when it cannot parse `text`, else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our business
            ast.parse(text)
    except SyntaxError as exc:
        return Problem("syntax", f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    except (RecursionError, MemoryError, ValueError) as exc:
        return Problem("syntax", f"CPython cannot compile it: {type(exc).__name__}", 1, 1)
    return None
