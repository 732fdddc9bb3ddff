"""The post-condition: re-scan a written tree with `ast` and CPython's own finder, independently
of the scanner and planner, and report every import the tree cannot satisfy."""

from __future__ import annotations

import ast
import functools
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


def find(paths: tuple[str, ...], name: str) -> str | None:
    """How `name` imports from `paths` alone, by CPython's FileFinder without caches:
    "regular" (a module or a package with __init__.py), "namespace", or None (it does not)."""
    search: list[str] = list(paths)
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
    kind_in = functools.lru_cache(maxsize=None)(find)
    tree_paths, source_paths = (str(tree),), tuple(str(s) for s in sources)
    for path in sorted(tree.rglob("*.py")):
        rel = path.relative_to(tree)
        shown = f"{shown_as}/{rel.as_posix()}"
        data = path.read_bytes()
        try:
            module = ast.parse(data, filename=shown)
        except SyntaxError as exc:
            problems.append(Diagnostic(shown, exc.lineno or 1, exc.offset or 1, f"syntax error: {exc.msg}"))
            continue
        found = list(_imports(module.body, list(rel.parent.parts)))
        if b"import_module" in data or b"__import__" in data:
            found += [site for node in ast.walk(module) if isinstance(node, ast.Call) for site in _literal_call(node)]
        for node, names in found:
            for name in names:
                if name.split(".")[0] not in first_party:
                    ok = name.split(".")[0] in allowed
                    message = None if ok else f"imports {name!r}, a third-party name not allowed for this surface"
                else:
                    message = _missing(name, lambda n: kind_in(tree_paths, n), lambda n: kind_in(source_paths, n))
                if message:
                    problems.append(Diagnostic(shown, node.lineno, node.col_offset + 1, message))
    return problems


def _missing(name: str, here_kind, there_kind) -> str | None:
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        here, there = here_kind(prefix), there_kind(prefix)
        if here is None and (there is not None or i == 1):
            return f"imports {name!r}, which was not copied into the surface"
        if here == "namespace" and there == "regular":
            return f"imports {name!r}, but package {prefix!r} has no __init__.py in the copy"
        if here is None:
            return None  # `from pkg import name` where name is an attribute, not a module
    return None


def _imports(body: list[ast.stmt], package: list[str]):
    """(node, [absolute module names]) for runtime import statements, following statement
    bodies only; skips `if TYPE_CHECKING:` bodies and `try/except ImportError` bodies."""
    for node in body:
        if isinstance(node, ast.Import):
            yield node, [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            yield node, [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test).split("."):
            yield from _imports(node.orelse, package)
        elif isinstance(node, ast.Try | ast.TryStar):
            if not any(_catches_import_error(h) for h in node.handlers):
                yield from _imports(node.body, package)
            for handler in node.handlers:
                yield from _imports(handler.body, package)
            yield from _imports(node.orelse + node.finalbody, package)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                yield from _imports(case.body, package)
        else:
            yield from _imports(getattr(node, "body", []), package)
            yield from _imports(getattr(node, "orelse", []), package)


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
