"""Build a surface's bundle reproducibly: the OS zipapp (shiv) and the tenant wheel (pip wheel).

`build_surface(config, name, dist_dir) -> Path` is the whole interface:

- It first asks the freshness gate (`check_fresh`, by default the sync tool's check) whether the
  surface's synced copy is exactly what `sync` would write; a stale or hand-edited copy stops the
  build with the files named. `bonsai-sync build` runs `sync` before this, so a build never
  packages a copy nobody verified.
- Everything is staged in a temporary directory (the surface's hand-written part, its synced
  copy, and for the OS bundle the third-party distributions it needs, copied from the building
  environment), so stray `build/`, `*.egg-info` or `__pycache__` in the tree never leak in.
- Same inputs, same bytes: staged files get fixed modes and timestamps, archives list entries
  sorted and carry SOURCE_DATE_EPOCH (1980-01-01) as their date.

Bundles:
- **os** -> `dist/bonsai-os-<version>-<cpython tag>-<platform>.pyz`: one file run with a plain
  `python3` of the same version and platform; numpy, wgpu (its native library) and the default
  model are inside. Needs `shiv` in the building environment.
- **tenant** -> `dist/bonsai_tenant-<version>-py3-none-any.whl` from `surfaces/tenant/pyproject.toml`
  (the hand-written `src/` plus the synced `vendor/`); its dependencies are declared, not bundled.
  Needs `setuptools` and `wheel` in the building environment (`--no-build-isolation`: no download).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from .errors import FatalError, UsageError

SOURCE_DATE_EPOCH = 315532800  # 1980-01-01T00:00:00Z, the earliest date a zip entry can hold
LOCK_NAME = "bonsai-sync.lock"
_CACHES = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_HAND_WRITTEN_SKIP = _CACHES | {"build", "dist"}  # build leftovers in a surface's own tree
_VENDOR_SKIP = _CACHES | {LOCK_NAME}  # the lock is the sync tool's record, not part of the runtime


class BuildError(FatalError):
    """A bundle could not be built: a tool failed or something the bundle needs is missing (exit 3)."""

    exit_code = 3


class StaleSurfaceError(FatalError):
    """The surface's synced copy is stale or unverified; `bonsai-sync sync` first (exit 1)."""

    exit_code = 1


# Raises when the surface's copy is stale; returns the third-party import names the copy uses
# (None: unknown, skip the cross-check against what the bundle carries or declares).
FreshnessGate = Callable[[Any, str], "tuple[str, ...] | None"]


def build_surface(config: Any, surface_name: str, dist_dir: str | Path,
                  *, check_fresh: FreshnessGate | None = None) -> Path:
    """Build `surface_name`'s bundle into `dist_dir` and return its path.

    `config` is the sync tool's Config (`config.root`, `config.surface(name).dest`). `check_fresh`
    raises when the synced copy is not exactly what `sync` would write; it defaults to the sync
    tool's own check. Raises UsageError for a surface without a bundle, StaleSurfaceError,
    BuildError.
    """
    builder = BUILDERS.get(surface_name)
    if builder is None:
        raise UsageError(f"surface {surface_name!r} has no bundle here; buildable: {', '.join(sorted(BUILDERS))}")
    surface = config.surface(surface_name)
    third_party = (check_fresh or default_freshness_gate)(config, surface_name)
    root = Path(config.root)
    vendor = root / surface.dest
    if not (vendor / LOCK_NAME).is_file():
        raise StaleSurfaceError(f"{surface.dest}: no {LOCK_NAME}; run `bonsai-sync sync --surface {surface_name}`")
    src = root / "surfaces" / surface_name / APP_DIRS.get(surface_name, "src")
    check_app_imports(root, src, vendor, surface_name)
    if third_party is not None:
        third_party = tuple(sorted({*third_party, *app_third_party(src)}))
    dist = Path(dist_dir)
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"bonsai-build-{surface_name}-") as tmp:
        return builder(root, vendor, Path(tmp), dist, third_party)


def default_freshness_gate(config: Any, surface_name: str) -> tuple[str, ...]:
    """The sync tool's check for one surface: StaleSurfaceError naming every stale file and why."""
    from .check import stale_files
    from .pipeline import Workspace

    workspace = Workspace(Path(config.root))
    plan = workspace.plan(workspace.config.surface(surface_name))
    stale = stale_files(workspace.root, plan, workspace.lock_text(plan))  # exactly what `check` runs
    if stale:
        raise StaleSurfaceError(*(f"{s.path}: {s.reason}" for s in stale),
                                f"surface {surface_name!r} is stale: run `bonsai-sync sync` before building")
    return tuple(plan.third_party)


def refuse_hand_edits(workspace: Any, names: tuple[str, ...]) -> None:
    """Before `build` syncs: a copy edited by hand is refused (naming each file), never overwritten."""
    from .check import EDITED, stale_files

    edited = []
    for surface in workspace.surfaces(names):
        plan = workspace.plan(surface)
        edited += [f"{s.path}: {s.reason}" for s in stale_files(workspace.root, plan, workspace.lock_text(plan))
                   if s.reason == EDITED]
    if edited:
        raise StaleSurfaceError(*edited, "not building over hand edits: move the change into the runtime "
                                "(the only copy edited by hand), or run `bonsai-sync sync` to discard it")


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


def describe(path: Path, root: Path | None = None) -> str:
    """`dist/x.whl  1.2 MB` — where a bundle went and its size, for the CLI to print."""
    shown = path.relative_to(root) if root is not None and path.is_relative_to(root) else path
    return f"{shown}  {path.stat().st_size / 1e6:.1f} MB ({path.stat().st_size} bytes)"


def _skipped(rel: Path, skip: set[str]) -> bool:
    return rel.suffix in (".pyc", ".pyo") or any(p in skip or p.endswith(".egg-info") for p in rel.parts)


def stage_tree(src: Path, dst: Path, skip: set[str] = _HAND_WRITTEN_SKIP) -> None:
    """Copy `src` into `dst` without caches and build leftovers; fixed modes and timestamps."""
    if not src.is_dir():
        raise BuildError(f"{src}: missing; the surface needs it to build")
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if _skipped(rel, skip) or not path.is_file():
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        target.chmod(0o755 if path.stat().st_mode & 0o111 else 0o644)
        os.utime(target, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))


def _run(command: list[str], what: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH), "PYTHONHASHSEED": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise BuildError(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}")


def _read_pyproject(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BuildError(f"{path}: cannot read the surface's pyproject.toml ({exc})") from exc


def _publish(built: Path, dist: Path) -> Path:
    target = dist / built.name
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(built, tmp)
    tmp.replace(target)
    return target


def build_tenant(root: Path, vendor: Path, tmp: Path, dist: Path, third_party: tuple[str, ...] | None) -> Path:
    """The tenant wheel: `pip wheel` on surfaces/tenant/pyproject.toml with src/ and the synced vendor/."""
    surface = root / "surfaces" / "tenant"
    pyproject = surface / "pyproject.toml"
    declared = _read_pyproject(pyproject).get("project", {}).get("dependencies", [])
    check_third_party(third_party, _requirement_closure(declared, set(), pyproject, follow=False), pyproject,
                      "declared")
    stage = tmp / "tenant"
    for name in ("pyproject.toml", "README.md"):
        stage_tree_file(surface / name, stage / name)
    stage_tree(surface / "src", stage / "src")
    stage_tree(vendor, stage / "vendor", _VENDOR_SKIP)
    out = tmp / "wheel"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", str(out), str(stage)], "building the tenant wheel")
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"pip wheel made {len(wheels)} wheels in {out}, expected one")
    return _publish(wheels[0], dist)


def stage_tree_file(src: Path, dst: Path) -> None:
    """Copy one file with a fixed mode and timestamp; BuildError naming it when missing."""
    if not src.is_file():
        raise BuildError(f"{src}: missing; the surface needs it to build")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    os.utime(dst, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))


def _requirement_closure(requirements: list[str], not_bundled: set[str], where: Path,
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


def stage_distribution(dist: metadata.Distribution, site: Path) -> None:
    """Copy one installed distribution's files (its RECORD) into a site-packages directory."""
    base = Path(str(dist.locate_file(""))).resolve()
    for file in sorted(dist.files or [], key=str):
        src = Path(str(dist.locate_file(file))).resolve()
        if not src.is_relative_to(base) or _skipped(Path(file), _CACHES) or not src.is_file():
            continue  # console scripts outside site-packages, caches
        if file.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
            continue  # installer bookkeeping: paths and hashes of the building machine
        stage_tree_file(src, site / src.relative_to(base))


def build_os(root: Path, vendor: Path, tmp: Path, dist: Path, third_party: tuple[str, ...] | None) -> Path:
    """The OS zipapp: shiv over one site-packages holding the app, the synced copy and its deps."""
    surface = root / "surfaces" / "os"
    pyproject = surface / "pyproject.toml"
    project = _read_pyproject(pyproject)
    meta, options = project.get("project", {}), project.get("tool", {}).get("bonsai-os", {})
    entry = options.get("entry-point")
    if not isinstance(entry, str):
        raise BuildError(f"{pyproject}: tool.bonsai-os.entry-point: required (MODULE:FUNCTION)")
    site = tmp / "site-packages"
    stage_tree(vendor, site, _VENDOR_SKIP)
    stage_tree(surface / "src", site)
    bundled = _requirement_closure(list(meta.get("dependencies", [])), set(options.get("not-bundled", [])), pyproject)
    check_third_party(third_party, bundled, pyproject, "bundled")
    for d in bundled:
        stage_distribution(d, site)
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    tag = f"{python}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"
    target = tmp / f"{meta.get('name', 'bonsai-os')}-{meta.get('version', '0')}-{tag}.pyz"
    _run([sys.executable, "-m", "shiv", "--site-packages", str(site), "--entry-point", entry,
          "--output-file", str(target), "--python", "/usr/bin/env python3", "--reproducible"],
         "building the OS bundle with shiv")
    return _publish(target, dist)


def build_browser_extension(root: Path, vendor: Path, tmp: Path, dist: Path, third_party: tuple[str, ...] | None) -> Path:
    """dist/bonsai-extension.zip from the verified synced closure (see build_extension.py)."""
    from .build_extension import build_extension

    return build_extension(root, dist, closure_dir=vendor)


# Where each surface's hand-written Python lives (checked for imports the synced copy lacks).
APP_DIRS = {"os": "src", "tenant": "src", "extension": "app"}
BUILDERS: dict[str, Callable[[Path, Path, Path, Path, tuple[str, ...] | None], Path]] = {
    "os": build_os, "tenant": build_tenant, "extension": build_browser_extension,
}
