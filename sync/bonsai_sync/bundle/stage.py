"""Stage files for a bundle with fixed modes and timestamps, run build tools, publish results."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import BuildError

SOURCE_DATE_EPOCH = 315532800  # 1980-01-01T00:00:00Z, the earliest date a zip entry can hold
LOCK_NAME = "bonsai-sync.lock"
CACHES = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
HAND_WRITTEN_SKIP = CACHES | {"build", "dist"}  # build leftovers in a surface's own tree
# (bundles stage src/ with LOCK_NAME skipped too: the lock is the sync tool's record, not part of the runtime)


def skipped(rel: Path, skip: set[str]) -> bool:
    return rel.suffix in (".pyc", ".pyo") or any(p in skip or p.endswith(".egg-info") for p in rel.parts)


def stage_tree(src: Path, dst: Path, skip: set[str] = HAND_WRITTEN_SKIP) -> None:
    """Copy `src` into `dst` without caches and build leftovers; fixed modes and timestamps."""
    if not src.is_dir():
        raise BuildError(f"{src}: missing; the surface needs it to build")
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if skipped(rel, skip) or not path.is_file():
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        target.chmod(0o755 if path.stat().st_mode & 0o111 else 0o644)
        os.utime(target, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))


def stage_tree_file(src: Path, dst: Path) -> None:
    """Copy one file with a fixed mode and timestamp; BuildError naming it when missing."""
    if not src.is_file():
        raise BuildError(f"{src}: missing; the surface needs it to build")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    os.utime(dst, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))


def stage_distribution(dist: metadata.Distribution, site: Path) -> None:
    """Copy one installed distribution's files (its RECORD) into a site-packages directory."""
    base = Path(str(dist.locate_file(""))).resolve()
    for file in sorted(dist.files or [], key=str):
        src = Path(str(dist.locate_file(file))).resolve()
        if not src.is_relative_to(base) or skipped(Path(file), CACHES) or not src.is_file():
            continue  # console scripts outside site-packages, caches
        if file.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
            continue  # installer bookkeeping: paths and hashes of the building machine
        stage_tree_file(src, site / src.relative_to(base))


def run_tool(command: list[str], what: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH), "PYTHONHASHSEED": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise BuildError(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}")


def read_pyproject(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BuildError(f"{path}: cannot read the surface's pyproject.toml ({exc})") from exc


def publish(built: Path, dist: Path) -> Path:
    target = dist / built.name
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(built, tmp)
    shutil.copymode(built, tmp)  # a zipapp stays executable
    tmp.replace(target)
    return target
