"""The wheel bundle kind: a wheel from a project folder's pyproject.toml and src/ (the synced copy inside it)."""

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


def build_wheel(project_dir: Path, vendor: Path, tmp: Path, dist: Path, third_party: tuple[str, ...] | None) -> Path:
    """A wheel (`bundle = "wheel"`): `pip wheel` on `project_dir`'s pyproject.toml with its src/, whose
    package holds the synced copy (src/app/_vendor): the wheel installs the app and nothing else;
    its dependencies are declared, not bundled."""
    surface = project_dir
    pyproject = surface / "pyproject.toml"
    app_package_copy(surface / "src", vendor, pyproject)
    declared = read_pyproject(pyproject).get("project", {}).get("dependencies", [])
    check_third_party(third_party, requirement_closure(declared, set(), pyproject, follow=False), pyproject,
                      "declared")
    stage = tmp / "project"
    stage_tree_file(pyproject, stage / "pyproject.toml")
    for extra in sorted(surface.iterdir()):
        if extra.is_file() and extra.name.upper().startswith(("README", "LICENSE", "LICENCE", "COPYING")):
            stage_tree_file(extra, stage / extra.name)
    stage_tree(surface / "src", stage / "src", HAND_WRITTEN_SKIP | {LOCK_NAME})
    out = tmp / "wheel"
    run_tool([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", str(out), str(stage)], f"building the wheel of {project_dir.name}")
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"pip wheel made {len(wheels)} wheels in {out}, expected one")
    return publish(wheels[0], dist)
