"""Scenario fixtures: copy a tiny repo from scenarios/ into tmp_path and run bonsai-sync on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bonsai_sync.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"


def child_env() -> dict[str, str]:
    """The environment for a subprocess that must import this very bonsai_sync (not another install)."""
    import bonsai_sync

    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "PYTHONPATH": str(Path(bonsai_sync.__file__).resolve().parents[1])}


class Repo:
    """A scenario copied into a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run(self, *args: str) -> Result:
        """Run the CLI in-process through click's CliRunner."""
        return CliRunner().invoke(main, ["--root", str(self.root), *args], catch_exceptions=False)

    def run_process(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the CLI as a real `python -m bonsai_sync` subprocess (of the bonsai_sync under test)."""
        return subprocess.run(
            [sys.executable, "-m", "bonsai_sync", "--root", str(self.root), *args],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=120,
        )

    def listing(self, folder: str) -> list[str]:
        """Sorted posix paths of every file below `folder` (no __pycache__)."""
        base = self.root / folder
        return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def edit_config(self, old: str, new: str) -> None:
        text = self.read("pyproject.toml")
        assert old in text, f"{old!r} not in the scenario's pyproject.toml"
        self.write("pyproject.toml", text.replace(old, new))


@pytest.fixture
def scenario(tmp_path: Path):
    """`scenario("closure")` -> a Repo holding a fresh copy of tests/sync/scenarios/closure."""

    def copy(name: str) -> Repo:
        root = tmp_path / name
        shutil.copytree(SCENARIOS / name, root, ignore=shutil.ignore_patterns("__pycache__"))
        return Repo(root)

    return copy


@pytest.fixture
def synced_leaf(scenario) -> Repo:
    """The `closure` scenario with its `leaf` surface synced."""
    repo = scenario("closure")
    assert repo.run("sync", "--surface", "leaf").exit_code == 0
    return repo


@pytest.fixture(name="child_env")
def child_env_fixture():
    """`child_env()` -> the environment for a subprocess importing this bonsai_sync."""
    return child_env


@pytest.fixture
def repo_at():
    """`repo_at(path)` -> a Repo over an existing tree (for repos built by the test itself)."""
    return Repo


SURFACE = """[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.app]
dest = "out/vendor"
entry = ["app.main"]
"""


@pytest.fixture
def make_repo(tmp_path: Path):
    """`make_repo({"src/app/main.py": "...", ...}, extra="exclude = [...]")` -> a Repo holding those
    files and a pyproject.toml with one surface `app` (entry app.main, dest out/vendor) plus `extra`
    lines in its table; `src/app/__init__.py` is added when not given."""

    def make(files: dict[str, str | bytes], extra: str = "", name: str = "repo") -> Repo:
        root = tmp_path / name
        repo = Repo(root)
        files = {"src/app/__init__.py": "", **files}
        for rel, body in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body if isinstance(body, bytes) else body.encode())
        if not (root / "pyproject.toml").exists():
            repo.write("pyproject.toml", SURFACE + extra)
        return repo

    return make
