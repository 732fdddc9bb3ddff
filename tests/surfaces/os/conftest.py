"""OS-surface fixtures: the hand-written package on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "surfaces" / "os" / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def os_repo(tmp_path_factory):
    """A synced scenario copy of the repository (see surface_repo.py)."""
    from surface_repo import make_repo

    return make_repo(tmp_path_factory.mktemp("os-repo"))


@pytest.fixture(scope="session")
def os_bundle(os_repo, tmp_path_factory):
    """The OS bundle built from the scenario repository (built once per session: ~20 s here)."""
    from surface_repo import config

    from bonsai_sync.bundle import build_surface

    return build_surface(config(os_repo), "os", tmp_path_factory.mktemp("dist-1"))


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory):
    """A fresh interpreter with nothing installed: a venv without pip, outside the repository."""
    import subprocess

    home = tmp_path_factory.mktemp("bare")
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(home / "venv")], check=True)
    return home / "venv" / "bin" / "python"
