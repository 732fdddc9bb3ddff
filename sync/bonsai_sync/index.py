"""Find first-party modules in the source roots the way CPython's path finder would."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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

    @property
    def package(self) -> str:
        """The package relative imports start from (itself for a package, else its parent)."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


class ModuleIndex:
    """Resolves dotted names against source roots: a regular package beats a module, which beats
    a namespace portion in the same directory; namespace portions merge across roots."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [r.resolve() for r in roots]
        self._found: dict[str, ModuleInfo | None] = {}

    def find(self, name: str) -> ModuleInfo | None:
        """The module called `name`, or None when no source root provides it."""
        if name not in self._found:
            self._found[name] = self._search(name)
        return self._found[name]

    def _search(self, name: str) -> ModuleInfo | None:
        parent_name, _, last = name.rpartition(".")
        if not last or not last.isidentifier():
            return None
        if parent_name:
            parent = self.find(parent_name)
            if parent is None or not parent.is_package:
                return None
            places = list(parent.dirs)
        else:
            places = self.roots
        portions: list[Path] = []
        for place in places:
            candidate = place / last
            if candidate.is_dir():
                init = candidate / "__init__.py"
                if init.is_file():
                    return self._info(name, init, (candidate,))
                portions.append(candidate)
            module = place / f"{last}.py"
            if module.is_file():
                return self._info(name, module, ())
        if portions:
            return self._info(name, None, tuple(portions))
        return None

    def _info(self, name: str, file: Path | None, dirs: tuple[Path, ...]) -> ModuleInfo:
        anchor = file if file is not None else dirs[0]
        root = next(r for r in self.roots if r in anchor.parents)
        return ModuleInfo(name, file, root, anchor.relative_to(root).as_posix(), dirs)

    def submodules(self, name: str, recursive: bool) -> list[str]:
        """Names of the modules directly below package `name` (all below when `recursive`)."""
        info = self.find(name)
        if info is None or not info.is_package:
            return []
        found: set[str] = set()
        for place in info.dirs:
            for child in place.iterdir():
                stem = child.name[:-3] if child.name.endswith(".py") else child.name
                if child.name in ("__init__.py", "__pycache__") or (child.is_file() and not child.name.endswith(".py")):
                    continue
                if self.find(f"{name}.{stem}") is not None:
                    found.add(f"{name}.{stem}")
        if recursive:
            for sub in list(found):
                found.update(self.submodules(sub, True))
        return sorted(found)
