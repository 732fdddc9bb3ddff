"""Read `[tool.bonsai-sync]` from pyproject.toml into frozen dataclasses; misspelt keys are errors."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError, Diagnostic

TABLE = "tool.bonsai-sync"
_TOP_KEYS = {"source", "third-party", "surfaces"}
_SURFACE_KEYS = {"dest", "entry", "third-party", "hidden-imports", "data"}


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
    # targets of dynamic imports the scanner cannot read: "pkg.mod", "pkg.*", "pkg.**"
    hidden_imports: tuple[str, ...]
    # extra resource globs relative to a source root ("bonsai/kernels/*.wgsl")
    data: tuple[str, ...]


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


def _line_of(text: str, table: str, key: str | None) -> int:
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
    return ConfigError(Diagnostic("pyproject.toml", _line_of(text, table, key), 1, f"{where}: {message}"))


def _strings(text: str, table: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise error(text, table, key, "must be a list of strings")
    return tuple(value)


def _check_keys(text: str, table: str, found: dict[str, Any], allowed: set[str]) -> None:
    for key in found:
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise error(text, table, key, f"unknown key {key!r} (known keys: {known})")


def load(root: Path) -> Config:
    """Read and validate `root/pyproject.toml`; every problem names the key it is about."""
    path = root / "pyproject.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no pyproject.toml here; pass --root DIR to point at the repository") from None
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
    entry = _strings(text, table, "entry", body.get("entry", []))
    if not entry:
        raise error(text, table, "entry", "list at least one entry module")
    return Surface(
        name=name,
        dest=Path(dest).as_posix().rstrip("/"),
        entry=entry,
        third_party=common + _strings(text, table, "third-party", body.get("third-party", [])),
        hidden_imports=_strings(text, table, "hidden-imports", body.get("hidden-imports", [])),
        data=_strings(text, table, "data", body.get("data", [])),
    )


def _check_dests(text: str, root: Path, source: tuple[str, ...], surfaces: tuple[Surface, ...]) -> None:
    resolved_sources = [(root / s).resolve() for s in source]
    seen: list[tuple[Surface, Path]] = []
    for surface in surfaces:
        table = f"{TABLE}.surfaces.{surface.name}"
        dest = (root / surface.dest).resolve()
        for src in resolved_sources:
            if dest == src or src in dest.parents or dest in src.parents:
                raise error(text, table, "dest", f"{surface.dest!r} overlaps source root {src.relative_to(root.resolve())!s}")
        for other, other_dest in seen:
            if dest == other_dest or other_dest in dest.parents or dest in other_dest.parents:
                raise error(text, table, "dest", f"{surface.dest!r} overlaps the dest of surface {other.name!r}")
        seen.append((surface, dest))
