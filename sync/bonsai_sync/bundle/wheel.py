"""The tenant bundle: a wheel from surfaces/tenant/pyproject.toml and src/ (the synced copy inside it)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import BuildError
from .deps import app_package_copy, check_third_party, requirement_closure
from .stage import (
    HAND_WRITTEN_SKIP,
    LOCK_NAME,
    publish,
    read_pyproject,
    run_tool,
    stage_tree,
    stage_tree_file,
)


def build_tenant(root: Path, vendor: Path, tmp: Path, dist: Path, third_party: tuple[str, ...] | None) -> Path:
    """The tenant wheel: `pip wheel` on surfaces/tenant/pyproject.toml with src/, whose package holds the
    synced copy (src/bonsai_tenant/_vendor): the wheel installs `bonsai_tenant` and nothing else."""
    surface = root / "surfaces" / "tenant"
    pyproject = surface / "pyproject.toml"
    app_package_copy(surface / "src", vendor, pyproject)
    declared = read_pyproject(pyproject).get("project", {}).get("dependencies", [])
    check_third_party(third_party, requirement_closure(declared, set(), pyproject, follow=False), pyproject,
                      "declared")
    stage = tmp / "tenant"
    for name in ("pyproject.toml", "README.md"):
        stage_tree_file(surface / name, stage / name)
    stage_tree(surface / "src", stage / "src", HAND_WRITTEN_SKIP | {LOCK_NAME})
    out = tmp / "wheel"
    run_tool([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", str(out), str(stage)], "building the tenant wheel")
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"pip wheel made {len(wheels)} wheels in {out}, expected one")
    return publish(wheels[0], dist)
