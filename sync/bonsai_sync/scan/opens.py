"""Whether a module writes names a scan cannot see: a real call of globals()/locals()/vars() or a
subscript of sys.modules in its code (its syntax tree, never its comments or strings)."""

from __future__ import annotations

import ast
import warnings

# the cheap text test first: only a file spelling one of these can hold such code
OPEN_HINTS = ("globals", "locals", "vars", "modules")


def opens_names(text: str, tree: ast.AST | None = None) -> bool:
    """True when the code of `text` (parsed, or its tree `tree`) calls globals(), locals() or vars() (no argument),
    or subscripts `sys.modules` (also as `modules` imported from sys): then the module may bind any
    name, and a from-import of it is not checked by name."""
    if not any(hint in text for hint in OPEN_HINTS):
        return False
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text)
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            return True  # unreadable here: stay on the side that never raises a false error
    modules = {"sys.modules"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "sys" and node.level == 0:
            modules.update(a.asname or a.name for a in node.names if a.name == "modules")
        elif isinstance(node, ast.Import):
            modules.update(f"{a.asname}.modules" for a in node.names if a.name == "sys" and a.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                node.func.id in ("globals", "locals") or (node.func.id == "vars" and not node.args)):
            return True
        if isinstance(node, ast.Subscript) and _dotted(node.value) in modules:
            return True
    return False


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None
