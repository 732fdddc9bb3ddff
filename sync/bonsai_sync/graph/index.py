"""Find first-party modules in the source roots the way CPython's path finder would (sources and
compiled extension modules, packages, namespace portions)."""

from __future__ import annotations

import functools
import importlib.machinery as machinery
import os
from dataclasses import dataclass
from pathlib import Path

# CPython's FileFinder tries extension modules first, then sources (bytecode-only modules are not copied)
SUFFIXES = tuple(machinery.EXTENSION_SUFFIXES) + tuple(machinery.SOURCE_SUFFIXES)


@dataclass(frozen=True)
class ModuleInfo:
    """A first-party module: `file` is None for a namespace package (a directory, no __init__.py)."""

    name: str
    file: Path | None
    # the source root it was found under; `rel` is relative to it (posix)
    root: Path
    rel: str
    # where its submodules are searched; empty for a plain module
    dirs: tuple[Path, ...] = ()

    @property
    def is_package(self) -> bool:
        return bool(self.dirs)

    @functools.cached_property
    def compiled(self) -> bool:
        """A compiled extension module (`.so`, `.pyd`): copied as is, never scanned."""
        return self.file is not None and self.file.name.endswith(tuple(machinery.EXTENSION_SUFFIXES))

    @property
    def package(self) -> str:
        """The package relative imports start from (itself for a package, else its parent)."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def compiled_tag(filename: str) -> str:
    """The platform/ABI tag of an extension module's file name: `cpython-311-x86_64-linux-gnu`,
    `abi3`, or "" for a bare `.so`/`.pyd`."""
    for suffix in machinery.EXTENSION_SUFFIXES:
        if filename.endswith(suffix):
            return suffix.strip(".").rpartition(".")[0]
    parts = filename.split(".")
    return ".".join(parts[1:-1]) if len(parts) > 2 else ""


def _module_name(filename: str) -> str | None:
    """The module name a file in a package directory imports as, or None when it is not a module."""
    for suffix in SUFFIXES:
        if filename.endswith(suffix):
            stem = filename[: -len(suffix)]
            return stem if stem and "." not in stem else None
    return None


class ModuleIndex:
    """Resolves dotted names against source roots: a regular package beats a module, which beats
    a namespace portion in the same directory; namespace portions merge across roots."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [r.resolve() for r in roots]
        self._found: dict[str, ModuleInfo | None] = {}
        self._listings: dict[Path, dict[str, bool]] = {}

    def find(self, name: str) -> ModuleInfo | None:
        """The module called `name`, or None when no source root provides it."""
        if name in self._found:
            return self._found[name]
        todo = [name]  # resolve unknown ancestors first, iteratively: package trees may be deep
        while "." in todo[-1] and todo[-1].rpartition(".")[0] not in self._found:
            todo.append(todo[-1].rpartition(".")[0])
        for prefix in reversed(todo):
            self._found[prefix] = self._search(prefix)
        return self._found[name]

    def _search(self, name: str) -> ModuleInfo | None:
        parent_name, _, last = name.rpartition(".")
        if not last or "/" in last or "\\" in last or last in (".", ".."):
            return None
        if parent_name:
            parent = self._found.get(parent_name)
            if parent is None or not parent.is_package:
                return None
            places = list(parent.dirs)
        else:
            places = self.roots
        portions: list[Path] = []
        for place in places:
            listing = self.listing(place)
            if listing.get(last) is True:
                candidate = place / last
                inside = self.listing(candidate)
                for suffix in SUFFIXES:
                    if inside.get(f"__init__{suffix}") is False:
                        return self._info(name, candidate / f"__init__{suffix}", (candidate,))
                portions.append(candidate)
            for suffix in SUFFIXES:
                if listing.get(f"{last}{suffix}") is False:
                    return self._info(name, place / f"{last}{suffix}", ())
        if portions:
            return self._info(name, None, tuple(portions))
        return None

    def _info(self, name: str, file: Path | None, dirs: tuple[Path, ...]) -> ModuleInfo:
        anchor = file if file is not None else dirs[0]
        root = next(r for r in self.roots if anchor.is_relative_to(r) and anchor != r)
        return ModuleInfo(name, file, root, anchor.relative_to(root).as_posix(), dirs)

    def listing(self, folder: Path) -> dict[str, bool]:
        """`name -> is a directory` for the files and directories in `folder` (links followed), read
        once per run: one directory read answers every name looked up in it."""
        found = self._listings.get(folder)
        if found is None:
            found = {}
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if entry.is_dir():
                            found[entry.name] = True
                        elif entry.is_file():
                            found[entry.name] = False
            except (FileNotFoundError, NotADirectoryError):
                pass
            self._listings[folder] = found
        return found

    def submodules(self, name: str, recursive: bool) -> list[str]:
        """Names of the modules directly below package `name` (all below when `recursive`)."""
        todo, found = [name], set()
        while todo:
            info = self.find(todo.pop())
            if info is None or not info.is_package:
                continue
            for place in info.dirs:
                for child, is_dir in sorted(self.listing(place).items()):
                    stem = child if is_dir else _module_name(child)
                    if stem is None or stem in ("__init__", "__pycache__") or (is_dir and not stem.isidentifier()):
                        continue
                    sub = f"{info.name}.{stem}"
                    if sub not in found and self.find(sub) is not None:
                        found.add(sub)
                        if recursive:
                            todo.append(sub)
        return sorted(found)
