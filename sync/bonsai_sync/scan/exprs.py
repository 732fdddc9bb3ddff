"""Recognise dynamic imports and resource paths in libcst expressions, through import aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

IMPORT_MODULE = "importlib.import_module"
FILES = ("importlib.resources.files", "importlib_resources.files")
PATHS = ("pathlib.Path", "pathlib.PurePath")
UNFOLLOWABLE = {
    "pkgutil.iter_modules": "pkgutil.iter_modules() plugin loop",
    "pkgutil.walk_packages": "pkgutil.walk_packages() plugin loop",
    "importlib.__import__": "importlib.__import__() of a name the scanner cannot read",
}
FILE = "__file__"


@dataclass(frozen=True)
class Path_:
    """A path expression: `anchor` is FILE (this file), None (this file's directory) or a package."""

    anchor: str | None
    parts: tuple[str, ...]
    literal: bool


def qualname(expr: Any, aliases: dict[str, str]) -> str | None:
    """The dotted name `expr` refers to, following `import x as y` aliases; None if not a name."""
    if isinstance(expr, cst.Name):
        return aliases.get(expr.value, expr.value)
    if isinstance(expr, cst.Attribute):
        base = qualname(expr.value, aliases)
        return f"{base}.{expr.attr.value}" if base else None
    return None


def literal(expr: Any) -> str | None:
    """The value of a plain string literal (no f-string, no bytes), else None."""
    if isinstance(expr, cst.SimpleString) and "b" not in expr.prefix.lower():
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.ConcatenatedString):
        left, right = literal(expr.left), literal(expr.right)
        return left + right if left is not None and right is not None else None
    return None


def literal_head(expr: Any) -> str | None:
    """The literal start of a string built at run time: f"a.{x}", "a." + x, "a.%s" % x,
    "a.{}".format(x) -> "a." (None when it starts with no literal text)."""
    if isinstance(expr, cst.FormattedString):
        first = expr.parts[0] if expr.parts else None
        return first.value if isinstance(first, cst.FormattedStringText) and first.value else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return literal(expr.left) or literal_head(expr.left)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        text = literal(expr.left)
        return text.split("%")[0] or None if text else None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        text = literal(expr.func.value)
        return text.split("{")[0] or None if text else None
    return None


def _is_file(expr: Any, aliases: dict[str, str]) -> bool:
    if isinstance(expr, cst.Name) and expr.value == FILE:
        return True
    if isinstance(expr, cst.Call) and qualname(expr.func, aliases) in ("os.path.abspath", "os.path.realpath"):
        return bool(expr.args) and _is_file(expr.args[0].value, aliases)
    return False


def _join(base: Path_ | None, args: list[Any]) -> Path_ | None:
    if base is None:
        return None
    values = [literal(a) for a in args]
    if base.anchor == FILE or not base.literal or any(v is None for v in values):
        return Path_(base.anchor, base.parts, False)
    parts = tuple(p for v in values for p in str(v).split("/") if p and p != ".")
    return Path_(base.anchor, base.parts + parts, True)


def path_of(expr: Any, aliases: dict[str, str]) -> Path_ | None:
    """The resource path `expr` builds from `__file__` or `importlib.resources.files()`, if any."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
        return _join(path_of(expr.left, aliases), [expr.right])
    if isinstance(expr, cst.Attribute) and expr.attr.value == "parent":
        base = path_of(expr.value, aliases)
        if base is None or not base.literal:
            return base
        return Path_(None, base.parts if base.anchor == FILE else base.parts + ("..",), True)
    if not isinstance(expr, cst.Call):
        return None
    args = [a.value for a in expr.args if a.keyword is None and not a.star]
    name = qualname(expr.func, aliases)
    if name in FILES:
        if not args:
            return Path_(None, (), True)
        if isinstance(args[0], cst.Name) and args[0].value in ("__package__", "__name__"):
            return Path_(None, (), True)
        anchor = literal(args[0])
        return Path_(anchor, (), anchor is not None)
    if name in PATHS:
        return Path_(FILE, (), True) if args and _is_file(args[0], aliases) else None
    if name == "os.path.dirname":
        return Path_(None, (), True) if args and _is_file(args[0], aliases) else None
    if name == "os.path.join":
        return _join(path_of(args[0], aliases), args[1:]) if args else None
    if isinstance(expr.func, cst.Attribute):
        method = expr.func.attr.value
        base = path_of(expr.func.value, aliases)
        if base is None:
            return None
        if method in ("resolve", "absolute"):
            return base
        if method == "joinpath":
            return _join(base if base.anchor != FILE else None, args)
        if method == "with_name" and base.anchor == FILE:
            return _join(Path_(None, (), True), args)
    return None
