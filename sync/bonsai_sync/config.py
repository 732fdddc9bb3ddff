"""Read `[tool.bonsai-sync]` from pyproject.toml into frozen dataclasses; misspelt keys are errors."""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError, Diagnostic

TABLE = "tool.bonsai-sync"
_TOP_KEYS = {"source", "third-party", "surfaces"}
_SURFACE_KEYS = {"dest", "entry", "third-party", "hidden-imports", "data", "exclude", "compiled", "python", "stubs",
                 "rewrite-imports", "bundle", "bundle-project"}
BUNDLE_KINDS = ("zipapp", "wheel", "extension")
_PYTHON = re.compile(r"^3\.(\d+)$")


@dataclass(frozen=True)
class Hint:
    """One `hidden-imports` entry: module patterns, answering dynamic import sites whose targets
    they match (`site` None) or exactly the site `site` ("path.py:LINE", an empty list allowed)."""

    patterns: tuple[str, ...]
    site: str | None = None


@dataclass(frozen=True)
class Surface:
    """One surface: where its copy goes and which modules it needs."""

    # the key under [tool.bonsai-sync.surfaces]
    name: str
    # a sys.path root inside the surface, relative to the repo root ("surfaces/os/vendor")
    dest: str
    # modules whose import closure the surface needs
    entry: tuple[str, ...]
    # top-level import names this surface may import without copying (global + its own)
    third_party: tuple[str, ...]
    # targets of dynamic imports the scanner cannot read: "pkg.mod", "pkg.*", "pkg.**", per site or by pattern
    hidden_imports: tuple[Hint, ...]
    # extra resource globs relative to a source root ("bonsai/kernels/*.wgsl")
    data: tuple[str, ...]
    # modules left out of the copy (a module and all below it; fnmatch patterns: "pkg", "pkg.sub.*")
    exclude: tuple[str, ...] = ()
    # "allow" copies compiled extension modules; "forbid" makes a required one an error
    compiled: str = "allow"
    # the Python (major, minor) the surface runs on: `sys.version_info` tests are decided for it
    python: tuple[int, int] = (sys.version_info[0], sys.version_info[1])
    # copy each copied module's `.pyi` stub and each package's `py.typed`
    stubs: bool = True
    # rewrite the copy's absolute imports of its own packages below the package holding the dest
    rewrite_imports: bool = False
    # what `build` makes of the surface ("zipapp", "wheel", "extension"; "" for none), from which folder
    bundle: str = ""
    bundle_project: str = ""


@dataclass(frozen=True)
class Config:
    """The whole `[tool.bonsai-sync]` table, resolved against the repository root."""

    # the repository root; every path in messages is relative to it
    root: Path
    # source roots: sys.path entries (relative to root) that hold first-party packages
    source: tuple[str, ...]
    # the surfaces, in the order the file lists them
    surfaces: tuple[Surface, ...]
    # the text of pyproject.toml, kept so errors can point at a line
    text: str = ""

    def surface(self, name: str) -> Surface:
        """The surface called `name`; an unknown name is an error listing the known ones."""
        for surface in self.surfaces:
            if surface.name == name:
                return surface
        known = ", ".join(s.name for s in self.surfaces) or "none"
        raise ConfigError(f"no surface named {name!r} in [{TABLE}.surfaces] (known: {known})")


def line_of(text: str, table: str, key: str | None) -> int:
    lines = text.splitlines()
    header = next((i for i, s in enumerate(lines) if s.strip() == f"[{table}]"), None)
    if header is None:
        return 1
    if key is not None:
        for i in range(header + 1, len(lines)):
            stripped = lines[i].strip()
            if stripped.startswith("["):
                break
            if stripped.split("=")[0].strip().strip('"') == key:
                return i + 1
    return header + 1


def error(text: str, table: str, key: str | None, message: str) -> ConfigError:
    """A ConfigError at `key` of `[table]`, worded `[table] key: message`."""
    where = f"[{table}] {key}" if key else f"[{table}]"
    return ConfigError(Diagnostic("pyproject.toml", line_of(text, table, key), 1, f"{where}: {message}"))


def _strings(text: str, table: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise error(text, table, key, "must be a list of strings")
    return tuple(value)


def _check_keys(text: str, table: str, found: dict[str, Any], allowed: set[str]) -> None:
    for key in found:
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise error(text, table, key, f"unknown key {key!r} (known keys: {known})")


def find_root(start: Path) -> Path:
    """The nearest directory at or above `start` whose pyproject.toml has a [tool.bonsai-sync]
    table (as git finds `.git`); `start` itself when there is none, so `load` names the problem."""
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / "pyproject.toml"
        try:
            if candidate.is_file() and "[tool.bonsai-sync" in candidate.read_text(encoding="utf-8", errors="replace"):
                return folder
        except OSError:
            continue
    return start


def load(root: Path) -> Config:
    """Read and validate `root/pyproject.toml`; every problem names the key it is about."""
    path = root / "pyproject.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no pyproject.toml here or in any parent with a [{TABLE}] table; pass --root DIR") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        table = tomllib.loads(text).get("tool", {}).get("bonsai-sync")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"pyproject.toml: not valid TOML: {exc}") from None
    if not isinstance(table, dict):
        raise ConfigError(f"pyproject.toml: no [{TABLE}] table; add one with `source` and `surfaces`")
    _check_keys(text, TABLE, table, _TOP_KEYS)
    source = _strings(text, TABLE, "source", table.get("source", []))
    if not source:
        raise error(text, TABLE, "source", "list at least one source root")
    for entry in source:
        if not (root / entry).is_dir():
            raise error(text, TABLE, "source", f"source root {entry!r} is not a directory under {root}")
        if not (root / entry).resolve().is_relative_to(root.resolve()):
            raise error(text, TABLE, "source", f"source root {entry!r} is outside the repository {root}; "
                        "copy or link its packages into a folder of the repository")
    common = _strings(text, TABLE, "third-party", table.get("third-party", []))
    surfaces_table = table.get("surfaces", {})
    if not isinstance(surfaces_table, dict) or not surfaces_table:
        raise error(text, TABLE, "surfaces", f"declare at least one [{TABLE}.surfaces.NAME] table")
    surfaces = tuple(
        _surface(text, name, body, common) for name, body in surfaces_table.items()
    )
    _check_dests(text, root, source, surfaces)
    return Config(root=root, source=source, surfaces=surfaces, text=text)


def _surface(text: str, name: str, body: Any, common: tuple[str, ...]) -> Surface:
    table = f"{TABLE}.surfaces.{name}"
    if not isinstance(body, dict):
        raise error(text, TABLE, "surfaces", f"{name!r} must be a table")
    _check_keys(text, table, body, _SURFACE_KEYS)
    dest = body.get("dest")
    if not isinstance(dest, str) or not dest.strip():
        raise error(text, table, "dest", "a path relative to the repo root is required")
    if Path(dest).is_absolute() or dest.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", dest):
        raise error(text, table, "dest", f"{dest!r} is absolute; a dest is a folder inside the repository, "
                    "given relative to its root")
    entry = _strings(text, table, "entry", body.get("entry", []))
    if not entry:
        raise error(text, table, "entry", "list at least one entry module")
    compiled = body.get("compiled", "allow")
    if compiled not in ("allow", "forbid"):
        raise error(text, table, "compiled", 'must be "allow" or "forbid"')
    python = body.get("python", f"{sys.version_info[0]}.{sys.version_info[1]}")
    match = _PYTHON.match(python) if isinstance(python, str) else None
    if match is None:
        raise error(text, table, "python", 'must be a Python version such as "3.11"')
    stubs = body.get("stubs", True)
    if not isinstance(stubs, bool):
        raise error(text, table, "stubs", "must be true or false")
    rewrite = body.get("rewrite-imports", False)
    if not isinstance(rewrite, bool):
        raise error(text, table, "rewrite-imports", "must be true or false")
    bundle = body.get("bundle", "")
    if bundle not in ("", *BUNDLE_KINDS):
        raise error(text, table, "bundle", f"must be one of {', '.join(map(repr, BUNDLE_KINDS))}")
    project = body.get("bundle-project", "")
    if not isinstance(project, str) or Path(project).is_absolute() or ".." in Path(project).parts:
        raise error(text, table, "bundle-project", "a folder inside the repository, relative to its root")
    return Surface(
        name=name,
        dest=Path(dest).as_posix().rstrip("/"),
        entry=entry,
        third_party=common + _strings(text, table, "third-party", body.get("third-party", [])),
        hidden_imports=_hints(text, table, body.get("hidden-imports", [])),
        data=_strings(text, table, "data", body.get("data", [])),
        exclude=_strings(text, table, "exclude", body.get("exclude", [])),
        compiled=compiled,
        python=(3, int(match.group(1))),
        stubs=stubs,
        rewrite_imports=rewrite,
        bundle=bundle,
        bundle_project=Path(project).as_posix() if project else "",
    )


def _hints(text: str, table: str, value: Any) -> tuple[Hint, ...]:
    """A list of patterns, or a table of `"path.py:LINE" = [patterns]` (`"*"` for patterns matched by target)."""
    if isinstance(value, list):
        return tuple(Hint((p,)) for p in _strings(text, table, "hidden-imports", value))
    if not isinstance(value, dict):
        raise error(text, table, "hidden-imports", 'must be a list of module patterns or a table of "path.py:LINE" = [...]')
    hints: list[Hint] = []
    for key, patterns in value.items():
        found = _strings(text, f"{table}.hidden-imports", key, patterns)
        if key == "*":
            hints += [Hint((p,)) for p in found]
        elif re.fullmatch(r".+\.py:\d+", key):
            hints.append(Hint(found, key))
        else:
            raise error(text, f"{table}.hidden-imports", key, 'a key is a site "path.py:LINE" (or "*" for patterns)')
    return tuple(hints)


def _check_dests(text: str, root: Path, source: tuple[str, ...], surfaces: tuple[Surface, ...]) -> None:
    resolved_sources = [(root / s).resolve() for s in source]
    seen: list[tuple[Surface, Path]] = []
    for surface in surfaces:
        table = f"{TABLE}.surfaces.{surface.name}"
        dest = (root / surface.dest).resolve()
        inside = root.resolve()
        if dest == inside or not dest.is_relative_to(inside):
            where = "is the repository itself" if dest == inside else f"resolves to {dest}, outside the repository"
            raise error(text, table, "dest", f"{surface.dest!r} {where}; a dest is a folder inside the repository "
                        "that bonsai-sync alone writes (links followed)")
        for src in resolved_sources:
            if dest == src or src in dest.parents or dest in src.parents:
                raise error(text, table, "dest", f"{surface.dest!r} overlaps source root {src.relative_to(root.resolve())!s}")
        for other, other_dest in seen:
            if dest == other_dest or other_dest in dest.parents or dest in other_dest.parents:
                raise error(text, table, "dest", f"{surface.dest!r} overlaps the dest of surface {other.name!r}")
        seen.append((surface, dest))
