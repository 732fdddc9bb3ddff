"""The post-condition: re-scan a written tree with `ast` and CPython's own finder, independently
of the scanner and planner, and report every import the tree cannot satisfy."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.machinery as machinery
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from .errors import Diagnostic
from .fsutil import listing, walk_files
from .verify_rules import imports_of

_ALLOWED = set(sys.stdlib_module_names) | {"__future__"}
_LOADERS = [
    (machinery.SourceFileLoader, machinery.SOURCE_SUFFIXES),
    (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
]


@dataclass(frozen=True)
class Rules:
    """What the written tree may import without holding it."""

    # top-level names the source roots provide (an import of one must resolve inside the tree)
    first_party: set[str]
    # declared third-party names (they win over a first-party package of the same name)
    third_party: frozenset[str]
    # `exclude` patterns: their modules may be imported optionally or inside a function only
    exclude: tuple[str, ...] = ()
    # compiled = "forbid": the tree must hold no extension module
    forbid_compiled: bool = False
    python: tuple[int, int] = (sys.version_info[0], sys.version_info[1])
    # the dotted name of the dest inside the package that holds it ("bonsai_tenant._vendor"), or None
    # when the dest is a sys.path root: inside a package, the copy must import itself relatively
    package: str | None = None

    def excluded(self, name: str) -> bool:
        parts = name.split(".")
        return any(fnmatchcase(".".join(parts[:i]), p) for p in self.exclude for i in range(1, len(parts) + 1))


def first_party_names(roots: list[Path]) -> set[str]:
    """Top-level names the source roots provide (packages, namespace dirs and modules)."""
    names = set()
    for root in roots:
        for entry in os.scandir(root):
            stem = entry.name.split(".")[0] if entry.is_file() else entry.name
            is_module = entry.name.endswith(tuple(machinery.SOURCE_SUFFIXES + machinery.EXTENSION_SUFFIXES))
            if stem.isidentifier() and stem != "__pycache__" and (entry.is_dir() or is_module):
                names.add(stem)
    return names


def enclosing_package(dest: Path) -> str | None:
    """The dotted name `dest` has inside the packages holding it (`bonsai_tenant._vendor`), or None
    when its parent folder is no package (then `dest` is a sys.path root of its own)."""
    parts = [dest.name]
    parent = dest.parent
    while (parent / "__init__.py").is_file() and parent != parent.parent:
        parts.insert(0, parent.name)
        parent = parent.parent
    return ".".join(parts) if len(parts) > 1 else None


def _absolute(node: ast.stmt | ast.Call, names: list[str]) -> list[str]:
    """The names an import site spells absolutely (a relative `from . import x` spells none)."""
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] if node.level == 0 else []
    return names if isinstance(node, ast.Import | ast.Call) else []


def find(paths: tuple[str, ...], name: str) -> str | None:
    """How `name` imports from `paths` alone, by CPython's FileFinder (not sys.path's caches):
    "regular" (a module or a package with __init__.py), "namespace", or None (it does not)."""
    return _locate(paths, name)[0]


# one FileFinder per directory for one verify_tree call (each lists its directory once)
_finders: dict[str, machinery.FileFinder] = {}


@functools.cache
def _locate(paths: tuple[str, ...], name: str) -> tuple[str | None, tuple[str, ...]]:
    """(kind, where its submodules are searched) for `name`, one package level at a time."""
    parent, _, last = name.rpartition(".")
    if parent:
        kind, search = _locate(paths, parent)
        if kind is None:
            return None, ()
    else:
        search = paths
    portions: list[str] = []
    for place in search:
        finder = _finders.get(place)
        if finder is None:
            finder = _finders[place] = machinery.FileFinder(place, *_LOADERS)
        spec = finder.find_spec(name)
        if spec is not None and spec.loader is not None:
            return "regular", tuple(spec.submodule_search_locations or ())
        if spec is not None:
            portions.extend(spec.submodule_search_locations or [])
    return ("namespace", tuple(portions)) if portions else (None, ())


# One import the verifier read: (line, col, absolute module names, lazy: in a function or under an
# undecided `if`, the names the site spells absolutely)
Site = tuple[int, int, tuple[str, ...], bool, tuple[str, ...]]
# What the verifier reads of one file: its import sites, or its syntax error as (line, col, message)
Reading = tuple[tuple[Site, ...], tuple[int, int, str] | None]


def read_file(data: bytes, package: tuple[str, ...], python: tuple[int, int]) -> Reading:
    """The runtime imports of a module's bytes (in `package`, for Python `python`), by `ast` alone:
    a pure function of its arguments, so a caller may keep the answer by content."""
    try:
        module = ast.parse(data)
    except (SyntaxError, ValueError) as exc:
        line, col = (exc.lineno or 1, exc.offset or 1) if isinstance(exc, SyntaxError) else (1, 1)
        return (), (line, col, f"syntax error: {getattr(exc, 'msg', exc)}")
    sites = imports_of(module, list(package), python, data)
    return tuple((node.lineno, node.col_offset + 1, tuple(names), lazy, tuple(_absolute(node, names)))
                 for node, names, lazy in sites), None


# One file's problems: (line, col, message)
Found = tuple[tuple[int, int, str], ...]


def verify_tree(tree: Path, shown_as: str, rules: Rules, sources: list[Path],
                read: Callable[[bytes, tuple[str, ...], tuple[int, int]], Reading] = read_file,
                memo: dict[str, dict[str, Found]] | None = None) -> list[Diagnostic]:
    """Every import in `tree` (shown in messages as `shown_as/...`) that resolves outside it. Every
    file is read and its imports resolved in `tree` as it is now; `read` may answer from a cache of
    `read_file` (a file's imports depend only on its bytes, its package and the Python). A file's
    problems depend only on its bytes, its package, the rules and what a finder sees in `tree` and
    `sources` (every folder and file name): with `memo` (kept by the caller between runs) they are
    taken from the last run that saw exactly the same, so after an edit that adds or removes no
    file only the changed files are resolved again; `memo` then holds this run's answers only."""
    problems = []
    _locate.cache_clear()
    _finders.clear()
    context = _context(tree, sources, rules) if memo is not None else ""
    known = memo.get(context, {}) if memo is not None else {}
    answers: dict[str, Found] = {}
    excluded = functools.cache(rules.excluded)
    paths = (str(tree),), tuple(str(s) for s in sources)
    own = first_party_names([tree]) & rules.first_party if rules.package else set()
    for path in walk_files(tree):
        rel = path.relative_to(tree)
        shown = f"{shown_as}/{rel.as_posix()}"
        if rules.forbid_compiled and path.name.endswith(tuple(machinery.EXTENSION_SUFFIXES)):
            problems.append(Diagnostic(shown, 1, 1, 'a compiled module, and this surface has compiled = "forbid"'))
        if path.suffix != ".py":
            continue
        data = path.read_bytes()
        key = f"{hashlib.sha256(data).hexdigest()}:{'/'.join(rel.parent.parts)}" if memo is not None else ""
        found = known.get(key)
        if found is None:
            found = _check_file(read(data, rel.parent.parts, rules.python), rules, excluded, paths, own)
        answers[key] = found
        problems.extend(Diagnostic(shown, *p) for p in found)
    if memo is not None:
        memo.clear()
        memo[context] = answers
    return problems


def _context(tree: Path, sources: list[Path], rules: Rules) -> str:
    """A hash of everything besides a file's bytes and package that its problems depend on."""
    hasher = hashlib.sha256(repr((sorted(rules.first_party), sorted(rules.third_party), rules.exclude,
                                  rules.python, rules.package, [str(s) for s in sources])).encode())
    suffixes = tuple(machinery.SOURCE_SUFFIXES + machinery.EXTENSION_SUFFIXES)
    for top in (tree, *sources):  # a finder sees folders and module files, nothing else
        seen = [p for p in listing(top) if p.endswith("/") or p.endswith(suffixes)]
        hasher.update(("\0".join(seen) + "\n").encode())
    return hasher.hexdigest()


def _check_file(reading: Reading, rules: Rules, excluded: Callable[[str], bool],
                paths: tuple[tuple[str, ...], tuple[str, ...]], own: set[str]) -> Found:
    """The problems of one file's imports (or its syntax error) against the rules and the two trees
    (`paths`: the written tree's, then the sources'); `own`: the tree's top-level names that must be
    imported relatively (the copy lives inside package `rules.package`)."""
    sites, syntax = reading
    tree_paths, source_paths = paths
    if syntax is not None:
        return (syntax,)
    found = []
    for line, col, names, lazy, spelled in sites:
        for name in (n for n in spelled if n.split(".")[0] in own):
            found.append((line, col, (
                f"imports {name!r} absolutely, but this copy lives inside package {rules.package!r} "
                f"(as '{rules.package}.{name.split('.')[0]}'); import it relatively (from . import ...) or set "
                "`rewrite-imports = true` for the surface, or it finds another copy, or none, at run time")))
        for name in names:
            if rules.package and (name == rules.package or name.startswith(rules.package + ".")):
                # the copy imports itself below the package holding it (rewrite-imports): resolve it in the tree
                inner = name[len(rules.package) + 1:]
                message = _missing(inner, lambda n: find(tree_paths, n), lambda n: find(source_paths, n)) if inner else None
                if message:
                    found.append((line, col, message.replace(repr(inner), repr(name), 1)))
                continue
            if rules.package and rules.package.startswith(name + "."):
                continue  # `import app._vendor.x` also imports `app`: the package that holds the copy
            top = name.split(".")[0]
            if excluded(name):
                message = None if lazy else f"imports {name!r} when it loads, and `exclude` leaves it out"
            elif top in rules.third_party or top not in rules.first_party:
                ok = top in rules.third_party or top in _ALLOWED
                message = None if ok else f"imports {name!r}, a third-party name not allowed for this surface"
            else:
                message = _missing(name, lambda n: find(tree_paths, n), lambda n: find(source_paths, n))
            if message:
                found.append((line, col, message))
    return tuple(found)


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


def summarized(problems: list[Diagnostic], shown_as: str, package: str | None, keep: int = 3) -> list[Diagnostic]:
    """`problems`, with the copy's absolute imports of itself (a dest inside a package) told once
    when there are more than `keep` of them: the cause is where the dest is, not each import."""
    if package is None:
        return problems
    marker = f"but this copy lives inside package {package!r}"
    own = [p for p in problems if marker in p.message]
    if len(own) <= keep:
        return problems
    files = len({p.path for p in own})
    first = own[0]
    summary = Diagnostic(shown_as, 1, 1, (
        f"{len(own)} imports in {files} files of the copy import its own packages absolutely, but the dest "
        f"lies inside package {package!r} (a folder above it has an __init__.py), so at run time they would "
        f"find another copy or none; set `rewrite-imports = true` for the surface (its imports are then "
        f"rewritten below {package!r}), or make the dest a sys.path root of its own (no __init__.py above it) "
        f"(first: {first.path}:{first.line}:{first.col})"))
    return [summary, *(p for p in problems if marker not in p.message)]
