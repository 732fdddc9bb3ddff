"""A zipapp bundle: one executable `.pyz` over a site-packages holding the app (the synced copy inside it) and its deps."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from ..errors import BuildError
from .deps import app_package_copy, check_third_party, requirement_closure
from .pyz import write_pyz
from .stage import (
    HAND_WRITTEN_SKIP,
    LOCK_NAME,
    SOURCE_DATE_EPOCH,
    publish,
    read_pyproject,
    stage_distribution,
    stage_tree,
    stage_tree_file,
)


def stage_default_model(folder: Path, pyproject: Path) -> None:
    """The default model from the building machine's model cache, into the bundle's `models/` folder."""
    from bonsai.errors import BonsaiError
    from bonsai.models import DEFAULT_MODEL, default_model_path

    try:
        model = default_model_path()
    except BonsaiError as exc:
        raise BuildError(f"{pyproject}: tool.bonsai-os.bundle-default-model: {exc}") from exc
    stage_tree_file(model, folder / model.name)
    notice = folder / f"{model.name}.LICENSE.txt"  # the model's licence travels beside it
    notice.write_text(f"{model.name}\nsha256 {DEFAULT_MODEL.sha256}\nlicence: {DEFAULT_MODEL.licence}\n"
                      f"from: {DEFAULT_MODEL.source}\n", encoding="utf-8")
    notice.chmod(0o644)
    os.utime(notice, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))


def build_zipapp(project_dir: Path, vendor: Path, tmp: Path, dist: Path, third_party: tuple[str, ...] | None) -> Path:
    """A zipapp (`bundle = "zipapp"`, written by `pyz.write_pyz`) over one site-packages holding the app of `project_dir`
    (its pyproject.toml and src/), the synced copy inside it and its dependencies. Its options are
    the pyproject's [tool.bonsai-bundle] table ([tool.bonsai-os] in this repository's OS surface)."""
    surface = project_dir
    pyproject = surface / "pyproject.toml"
    project = read_pyproject(pyproject)
    tools = project.get("tool", {})
    table = "bonsai-bundle" if "bonsai-bundle" in tools else "bonsai-os"
    meta, options = project.get("project", {}), tools.get(table, {})
    entry = options.get("entry-point")
    if not isinstance(entry, str):
        raise BuildError(f"{pyproject}: tool.{table}.entry-point: required (MODULE:FUNCTION)")
    app_package_copy(surface / "src", vendor, pyproject)
    site = tmp / "site-packages"
    stage_tree(surface / "src", site, HAND_WRITTEN_SKIP | {LOCK_NAME})  # the app, the synced copy inside it
    bundled = requirement_closure(list(meta.get("dependencies", [])), set(options.get("not-bundled", [])), pyproject)
    check_third_party(third_party, bundled, pyproject, "bundled")
    for d in bundled:
        stage_distribution(d, site)
    if options.get("bundle-default-model"):
        stage_default_model(site / "bonsai_os" / "models", pyproject)  # this repository's OS surface only
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    tag = f"{python}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"
    target = tmp / f"{meta.get('name', project_dir.name)}-{meta.get('version', '0')}-{tag}.pyz"
    write_pyz(site, target, name=str(meta.get("name", project_dir.name)), entry=entry,
              python=f"{sys.version_info.major}.{sys.version_info.minor}")
    return publish(target, dist)
