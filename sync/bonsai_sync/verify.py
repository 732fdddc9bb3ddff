"""The post-condition: re-scan a written tree with `ast` and CPython's own finder, independently
of the scanner and planner, and report every import the tree cannot satisfy."""

from __future__ import annotations

import ast
import importlib.machinery as machinery
import os
import sys
from pathlib import Path

from .errors import Diagnostic

_LOADERS = [
    (machinery.SourceFileLoader, machinery.SOURCE_SUFFIXES),
    (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
]


def first_party_names(roots: list[Path]) -> set[str]:
    """Top-level names the source roots provide (packages, namespace dirs and modules)."""
    names = set()
    for root in roots:
        for entry in os.scandir(root):
            stem = entry.name[:-3] if entry.name.endswith(".py") else entry.name
            if stem.isidentifier() and stem != "__pycache__" and (entry.is_dir() or entry.name.endswith(".py")):
                names.add(stem)
    return names


def find(paths: list[str], name: str) -> str | None:
    """How `name` imports from `paths` alone, by CPython's FileFinder without caches:
    "regular" (a module or a package with __init__.py), "namespace", or None (it does not)."""
    search = paths
    kind = None
    for i in range(name.count(".") + 1):
        portions: list[str] = []
        spec = None
        for place in search:
            spec = machinery.FileFinder(place, *_LOADERS).find_spec(".".join(name.split(".")[: i + 1]))
            if spec is not None and spec.loader is not None:
                break
            if spec is not None:
                portions.extend(spec.submodule_search_locations or [])
            spec = None
        if spec is None and not portions:
            return None
        kind = "regular" if spec is not None else "namespace"
        search = list(spec.submodule_search_locations or []) if spec is not None else portions
    return kind


def verify_tree(tree: Path, shown_as: str, first_party: set[str], allowed: set[str], sources: list[Path]) -> list[Diagnostic]:
    """Every import in `tree` (shown in messages as `shown_as/...`) that resolves outside it."""
    problems = []
    allowed = allowed | set(sys.stdlib_module_names) | {"__future__"}
    for path in sorted(tree.rglob("*.py")):
        rel = path.relative_to(tree)
        package = list(rel.parent.parts)
        shown = f"{shown_as}/{rel.as_posix()}"
        try:
            module = ast.parse(path.read_bytes(), filename=shown)
        except SyntaxError as exc:
            problems.append(Diagnostic(shown, exc.lineno or 1, exc.offset or 1, f"syntax error: {exc.msg}"))
            continue
        for node, names in _imports(module.body, package):
            for name in names:
                message = _problem(tree, name, first_party, allowed, sources)
                if message:
                    problems.append(Diagnostic(shown, node.lineno, node.col_offset + 1, message))
    return problems


def _problem(tree: Path, name: str, first_party: set[str], allowed: set[str], sources: list[Path]) -> str | None:
    top = name.split(".")[0]
    if top not in first_party:
        return None if top in allowed else f"imports {name!r}, a third-party name not allowed for this surface"
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        here, there = find([str(tree)], prefix), find([str(s) for s in sources], prefix)
        if here is None and (there is not None or i == 1):
            return f"imports {name!r}, which was not copied into the surface"
        if here == "namespace" and there == "regular":
            return f"imports {name!r}, but package {prefix!r} has no __init__.py in the copy"
        if here is None:
            return None  # `from pkg import name` where name is an attribute, not a module
    return None


def _imports(body: list[ast.stmt], package: list[str]):
    """(node, [absolute module names]) for runtime imports; skips TYPE_CHECKING and optional ones."""
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test).split("."):
            yield from _imports(node.orelse, package)
            continue
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            for handler in node.handlers:
                yield from _imports(handler.body, package)
            yield from _imports(node.orelse + node.finalbody, package)
            continue
        if isinstance(node, ast.Import):
            yield node, [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            yield node, [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _imports([child], package)
            elif isinstance(child, (ast.excepthandler, ast.match_case)):
                yield from _imports(child.body, package)
            else:
                for sub in ast.walk(child):
                    if isinstance(sub, ast.Call):
                        yield from _literal_call(sub)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    return handler.type is not None and any(n in ast.unparse(handler.type) for n in ("ImportError", "ModuleNotFoundError"))


def _absolute(module: str, level: int, package: list[str]) -> str:
    base = package[: len(package) - (level - 1)] if level else []
    return ".".join(base + ([module] if module else []))


def _literal_call(call: ast.Call):
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in ("import_module", "__import__") and call.args and isinstance(call.args[0], ast.Constant):
        value = call.args[0].value
        if isinstance(value, str) and not value.startswith("."):
            yield call, [value]
