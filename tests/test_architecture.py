"""The runtime's and bonsai-sync's architecture holds (import-linter contracts in pyproject.toml), and a break is caught."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(runtime: Path, cwd: Path, sync: Path = REPO / "sync") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(runtime), str(sync)])}
    return subprocess.run([str(LINT), "--config", str(REPO / "pyproject.toml"), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_contracts_hold():
    result = _lint(REPO / "runtime", REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


@pytest.mark.parametrize("module,line,contract", [
    ("kv/cache.py", "import numpy  # noqa\n", "imports neither numpy nor wgpu BROKEN"),
    ("engine/weights.py", "from ..kv.format import codec  # noqa\n", "imports neither numpy nor wgpu BROKEN"),
    ("toolcall/trie.py", "import numpy  # noqa\n", "imports neither numpy nor wgpu BROKEN"),
    ("kv/layout.py", "from ..engine import engine  # noqa\n", "Layers import downward only BROKEN"),
    ("gguf/reader.py", "from .. import config  # noqa\n", "Layers import downward only BROKEN"),
])
def test_a_forbidden_import_breaks_lint(tmp_path, module, line, contract):
    """Mutation: one forbidden import in a copy of the runtime makes `lint-imports` fail, naming the contract."""
    copy = tmp_path / "runtime"
    shutil.copytree(REPO / "runtime" / "bonsai", copy / "bonsai", ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "bonsai" / module
    target.write_text(target.read_text() + "\n" + line)
    result = _lint(copy, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert contract in result.stdout


SYNC_LAYERS = "bonsai-sync's steps import downward only: its folders read as its pipeline BROKEN"


@pytest.mark.parametrize("module,line", [
    ("scan/facts.py", "from .. import pipeline  # noqa\n"),  # the scanner reaching up to the workspace
    ("graph/index.py", "from ..write import lock  # noqa\n"),  # the module finder reaching up to the lock
    ("plan/files.py", "from ..state import freshness  # noqa\n"),
    ("write/tree.py", "from ..verify import tree  # noqa\n"),  # write and verify stay independent
])
def test_an_upward_import_in_bonsai_sync_breaks_lint(tmp_path, module, line):
    """Mutation: one import against bonsai-sync's layers in a copy of it makes `lint-imports` fail."""
    copy = tmp_path / "sync"
    shutil.copytree(REPO / "sync" / "bonsai_sync", copy / "bonsai_sync", ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "bonsai_sync" / module
    target.write_text(target.read_text() + "\n" + line)
    result = _lint(REPO / "runtime", tmp_path, sync=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert SYNC_LAYERS in result.stdout
