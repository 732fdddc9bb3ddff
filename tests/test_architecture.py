"""The runtime's architecture holds (import-linter contracts in pyproject.toml), and a break is caught."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(runtime: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(runtime)}
    return subprocess.run([str(LINT), "--config", str(REPO / "pyproject.toml"), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_contracts_hold():
    result = _lint(REPO / "runtime", REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize("module,line,contract", [
    ("kv/cache.py", "import numpy  # noqa\n", "imports neither numpy nor wgpu BROKEN"),
    ("engine/weights.py", "from ..kv.format import codec  # noqa\n", "imports neither numpy nor wgpu BROKEN"),
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
