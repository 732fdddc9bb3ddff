"""The tenant bundle: a wheel from surfaces/tenant/pyproject.toml, src/ and the synced vendor/."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import BuildError
from .deps import check_third_party, requirement_closure
from .stage import VENDOR_SKIP, publish, read_pyproject, run_tool, stage_tree, stage_tree_file


def build_tenant(root: Path, vendor: Path, tmp: Path, dist: Path, third_party: tuple[str, ...] | None) -> Path:
    """The tenant wheel: `pip wheel` on surfaces/tenant/pyproject.toml with src/ and the synced vendor/."""
    surface = root / "surfaces" / "tenant"
    pyproject = surface / "pyproject.toml"
    declared = read_pyproject(pyproject).get("project", {}).get("dependencies", [])
    check_third_party(third_party, requirement_closure(declared, set(), pyproject, follow=False), pyproject,
                      "declared")
    stage = tmp / "tenant"
    for name in ("pyproject.toml", "README.md"):
        stage_tree_file(surface / name, stage / name)
    stage_tree(surface / "src", stage / "src")
    stage_tree(vendor, stage / "vendor", VENDOR_SKIP)
    out = tmp / "wheel"
    run_tool([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", str(out), str(stage)], "building the tenant wheel")
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"pip wheel made {len(wheels)} wheels in {out}, expected one")
    return publish(wheels[0], dist)
