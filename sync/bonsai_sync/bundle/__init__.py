"""Build a surface's bundle reproducibly, of the kind its config declares (`bundle = KIND`).

`build_surface(config, name, dist_dir) -> Path` is the whole interface:

- It first asks the freshness gate (`check_fresh`, by default the sync tool's check) whether the
  surface's synced copy is exactly what `sync` would write; a stale or hand-edited copy stops the
  build with the files named. `bonsai-sync build` runs `sync` before this, so a build never
  packages a copy nobody verified.
- Everything is staged in a temporary directory (the surface's hand-written part, its synced
  copy, and for a zipapp the third-party distributions it needs, copied from the building
  environment), so stray `build/`, `*.egg-info` or `__pycache__` in the tree never leak in.
- Same inputs, same bytes: staged files get fixed modes and timestamps, archives list entries
  sorted and carry SOURCE_DATE_EPOCH (1980-01-01) as their date.

Kinds (each built from the surface's project folder: `bundle-project`, else the nearest folder above
the dest holding a pyproject.toml):
- **zipapp** -> `dist/<name>-<version>-<cpython tag>-<platform>.pyz` (`pyz.py`): one executable file run
  with a plain `python3` of the same version and platform, its dependencies inside, unpacked once per
  content hash on first run (`pyz_boot.py`); the entry point is `[tool.bonsai-bundle] entry-point` of the
  project's pyproject.toml.
- **wheel** -> `dist/<name>-<version>-py3-none-any.whl` from the project's pyproject.toml and its
  hand-written `src/`, whose package holds the synced copy in `_vendor/`; its dependencies are
  declared, not bundled. Both refuse a copy outside the app's package: a top-level package would
  overlap its own distribution (uninstalling either would break the other). Needs `setuptools`
  and `wheel` (`--no-build-isolation`: no download).
- **extension** -> `dist/bonsai-extension.zip`, the browser extension (see extension.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import BuildError, StaleSurfaceError, UsageError
from .deps import app_third_party, check_app_imports
from .stage import LOCK_NAME, SOURCE_DATE_EPOCH
from .wheel import build_wheel
from .zipapp import build_zipapp

__all__ = ["KINDS", "BuildError", "StaleSurfaceError", "SOURCE_DATE_EPOCH", "build_surface", "check_app_imports",
           "describe", "default_freshness_gate"]

# Raises when the surface's copy is stale; returns the third-party import names the copy uses
# (None: unknown, skip the cross-check against what the bundle carries or declares).
FreshnessGate = Callable[[Any, str], "tuple[str, ...] | None"]


def build_browser_extension(project_dir: Path, vendor: Path, tmp: Path, dist: Path,
                            third_party: tuple[str, ...] | None) -> Path:
    """A browser extension zip (`bundle = "extension"`) from the verified synced closure (see extension.py)."""
    from .extension import build_extension

    return build_extension(project_dir, dist, closure_dir=vendor, third_party=third_party, project_dir=project_dir)


# The bundle kinds a surface may declare (`bundle = KIND`), and where each keeps its hand-written Python
# (checked for imports the synced copy lacks).
KINDS: dict[str, Callable[[Path, Path, Path, Path, tuple[str, ...] | None], Path]] = {
    "zipapp": build_zipapp, "wheel": build_wheel, "extension": build_browser_extension,
}
APP_DIRS = {"zipapp": "src", "wheel": "src", "extension": "app"}


def project_dir(config: Any, surface: Any) -> Path:
    """The folder holding a surface's app (its pyproject.toml, or the extension's pages): `bundle-project`,
    else the nearest folder above the dest that holds a pyproject.toml, else the dest's parent."""
    root = Path(config.root)
    if surface.bundle_project:
        return root / surface.bundle_project
    dest = root / surface.dest
    return next((p for p in dest.parents if root in p.parents and (p / "pyproject.toml").is_file()), dest.parent)


def build_surface(config: Any, surface_name: str, dist_dir: str | Path,
                  *, check_fresh: FreshnessGate | None = None) -> Path:
    """Build `surface_name`'s bundle into `dist_dir` and return its path.

    `config` is the sync tool's Config (`config.root`, `config.surface(name)`: its `dest`, `bundle`
    kind and `bundle-project`). `check_fresh` raises when the synced copy is not exactly what `sync`
    would write; it defaults to the sync tool's own check. Raises UsageError for a surface without a
    bundle kind, StaleSurfaceError, BuildError.
    """
    surface = config.surface(surface_name)
    builder = KINDS.get(surface.bundle)
    if builder is None:
        raise UsageError(f"surface {surface_name!r} declares no bundle kind; add `bundle = \"zipapp\"`, \"wheel\" or "
                         f"\"extension\" to [tool.bonsai-sync.surfaces.{surface_name}]")
    third_party = (check_fresh or default_freshness_gate)(config, surface_name)
    vendor = Path(config.root) / surface.dest
    if not (vendor / LOCK_NAME).is_file():
        raise StaleSurfaceError(f"{surface.dest}: no {LOCK_NAME}; run `bonsai-sync sync --surface {surface_name}`")
    project = project_dir(config, surface)
    src = project / APP_DIRS[surface.bundle]
    check_app_imports(Path(config.root), src, vendor, surface_name)
    if third_party is not None:
        third_party = tuple(sorted({*third_party, *app_third_party(src)}))
    dist = Path(dist_dir)
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"bonsai-build-{surface_name}-") as tmp:
        return builder(project, vendor, Path(tmp), dist, third_party)


def workspace_gate(workspace: Any) -> FreshnessGate:
    """The freshness gate over an open Workspace: the surface's state as `check` computes it, once."""

    def gate(config: Any, surface_name: str) -> tuple[str, ...]:
        state = workspace.state(workspace.config.surface(surface_name), refresh=True)
        if state.stale:
            raise StaleSurfaceError(*(f"{s.path}: {s.reason}" for s in state.stale),
                                    f"surface {surface_name!r} is stale: run `bonsai-sync sync` before building")
        return tuple(state.plan.third_party)

    return gate


def default_freshness_gate(config: Any, surface_name: str) -> tuple[str, ...] | None:
    """The sync tool's check for one surface (for callers without a Workspace of their own)."""
    from ..pipeline import Workspace

    return workspace_gate(Workspace(Path(config.root)))(config, surface_name)


def describe(path: Path, root: Path | None = None) -> str:
    """`dist/x.whl  1.2 MB` — where a bundle went and its size, for the CLI to print."""
    shown = path.relative_to(root) if root is not None and path.is_relative_to(root) else path
    return f"{shown}  {path.stat().st_size / 1e6:.1f} MB ({path.stat().st_size} bytes)"
