"""What a bundle must carry: the app's imports of the synced copy, and the third-party distributions."""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

from ..errors import BuildError


def check_app_imports(root: Path, src: Path, vendor: Path, surface_name: str) -> None:
    """Every runtime module the hand-written app imports must be in the synced copy (`path:line` if not).

    A copy inside the app's package (`src/bonsai_os/_vendor`) must be imported as that copy
    (`from ._vendor.bonsai.x import ...`): an import of the top-level `bonsai` would load the runtime
    distribution instead, which the bundle neither carries nor declares.
    """
    inside = vendor.is_relative_to(src) and vendor != src
    package = ".".join(vendor.relative_to(src).parts) if inside else ""
    own = {p.name for p in vendor.iterdir() if p.is_dir() and p.name.isidentifier()} if inside else {"bonsai"}
    problems = []
    for path in sorted(src.rglob("*.py")):
        if inside and path.is_relative_to(vendor):
            continue  # the copy itself (bonsai-sync verifies it)
        here = list(path.relative_to(src).parent.parts)
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and (node.level == 0 or inside):
                base = here[: len(here) - (node.level - 1)] if node.level else []
                names = [".".join([*base, node.module])]
            else:
                continue
            for name in names:
                parts = name.split(".")
                shown = f"{path.relative_to(root)}:{node.lineno}"
                if inside and parts[0] in own:
                    problems.append(f"{shown}: imports {name}, the runtime distribution, not the surface's copy; "
                                    f"import it as {package}.{name} (from ._vendor... import)")
                elif inside and name.startswith(package + "."):
                    rest = name[len(package) + 1:].split(".")
                    if not _in_copy(vendor, rest):
                        problems.append(f"{shown}: imports {name}, which the synced copy lacks; add "
                                        f"{'.'.join(rest)} to [tool.bonsai-sync.surfaces.{surface_name}] entry")
                elif not inside and parts[0] == "bonsai" and not _in_copy(vendor, parts):
                    problems.append(f"{shown}: imports {name}, which the synced copy lacks; add it to "
                                    f"[tool.bonsai-sync.surfaces.{surface_name}] entry")
    if problems:
        raise BuildError(*problems)


def app_package_copy(src: Path, vendor: Path, pyproject: Path) -> None:
    """A bundle that installs packages must carry the runtime inside the app's own package, never as a
    top-level `bonsai` that would overlap (and break, on uninstall) the `bonsai` distribution."""
    if not (vendor.is_relative_to(src) and len(vendor.relative_to(src).parts) >= 2):
        raise BuildError(f"{vendor}: the synced copy must live inside the app's package (a dest such as "
                         f"{src.name}/<package>/_vendor), so the bundle installs no top-level copy of the runtime; "
                         f"see {pyproject.parent.name}'s [tool.bonsai-sync.surfaces] dest")


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
