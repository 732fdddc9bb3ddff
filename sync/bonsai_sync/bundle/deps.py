"""What a bundle must carry: the app's imports of the synced copy, and the third-party distributions."""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

from ..errors import BuildError


def check_app_imports(root: Path, src: Path, vendor: Path, surface_name: str) -> None:
    """Every `bonsai` module the hand-written app imports must be in the synced copy (`path:line` if not)."""
    problems = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "bonsai" and not _in_copy(vendor, parts):
                    problems.append(f"{path.relative_to(root)}:{node.lineno}: imports {name}, which the synced copy "
                                    f"lacks; add it to [tool.bonsai-sync.surfaces.{surface_name}] entry")
    if problems:
        raise BuildError(*problems)


def app_third_party(src: Path) -> set[str]:
    """Top-level names the hand-written app imports that are neither stdlib, `bonsai`, nor its own."""
    own = {p.name for p in src.iterdir() if p.is_dir() or p.suffix == ".py"} | {"bonsai"}
    found: set[str] = set()
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {n for n in found if n not in sys.stdlib_module_names and n not in own}


def _in_copy(vendor: Path, parts: list[str]) -> bool:
    return (vendor.joinpath(*parts) / "__init__.py").is_file() or vendor.joinpath(*parts[:-1], parts[-1] + ".py").is_file()


def _provided_names(dist: metadata.Distribution) -> set[str]:
    """Top-level import names a distribution installs (from its file list)."""
    names = set()
    for file in dist.files or []:
        top = file.parts[0]
        if not top.endswith((".dist-info", ".data")) and top != "..":
            names.add(top.split(".")[0])
    return names


def check_third_party(third_party: tuple[str, ...] | None, dists: list[metadata.Distribution], where: Path,
                      how: str) -> None:
    """Every third-party name the surface (copy and app) imports is provided by one of `dists`."""
    provided = set().union(*(_provided_names(d) for d in dists)) if dists else set()
    missing = sorted(set(third_party or ()) - provided)
    if missing:
        raise BuildError(f"{where}: the surface imports {', '.join(missing)}, which no {how} distribution "
                         "provides; add the distribution to [project] dependencies")


def requirement_closure(requirements: list[str], not_bundled: set[str], where: Path,
                         follow: bool = True) -> list[metadata.Distribution]:
    """Installed distributions for `requirements` and (`follow`) what they require, minus `not_bundled`."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    skip = {canonicalize_name(n) for n in not_bundled}
    found: dict[str, metadata.Distribution] = {}
    todo = list(requirements)
    while todo:
        req = Requirement(todo.pop())
        name = canonicalize_name(req.name)
        if name in found or name in skip or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError as exc:
            raise BuildError(f"{where}: {req.name} is not installed in the building environment "
                             f"({sys.executable}); install it or list it under not-bundled") from exc
        if not req.specifier.contains(dist.version, prereleases=True):
            raise BuildError(f"{where}: needs {req}, the building environment has {req.name} {dist.version}")
        found[name] = dist
        todo.extend(dist.requires or [] if follow else [])
    return [found[n] for n in sorted(found)]
