"""Kernels load from the runtime copy they belong to, wherever that copy is imported from.

Surfaces vendor the runtime inside their own package (`bonsai_tenant._vendor.bonsai`); kernels are
named by their canonical package (`gpu.kernel("bonsai.kv", "x.wgsl")`), which must resolve to the
copy doing the loading, never to another `bonsai` (or to nothing) on sys.path.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "runtime" / "bonsai"
PROBE = """
import sys
sys.path.insert(0, {root!r})
from surface._vendor.bonsai.gpu import shaders
print(shaders.load_source("bonsai.kv", "finalize.wgsl").splitlines()[0])
print(shaders.load_source("bonsai.ops", "rmsnorm.wgsl") == open({rmsnorm!r}).read())
try:
    shaders.load_source("bonsai.kv", "nope.wgsl")
except shaders.ShaderError as exc:
    print(exc)
print("bonsai" in sys.modules)
"""


@pytest.fixture
def vendored(tmp_path: Path) -> Path:
    """tmp/surface/_vendor/bonsai: the runtime copied inside a package, its finalize kernel marked."""
    (tmp_path / "surface").mkdir()
    (tmp_path / "surface" / "__init__.py").write_text("")
    copy = tmp_path / "surface" / "_vendor" / "bonsai"
    shutil.copytree(RUNTIME, copy, ignore=shutil.ignore_patterns("__pycache__"))
    kernel = copy / "kv" / "finalize.wgsl"
    kernel.write_text("// the vendored copy\n" + kernel.read_text())
    return tmp_path


def test_a_vendored_runtime_loads_its_own_kernels_in_an_isolated_interpreter(vendored):
    rmsnorm = vendored / "surface" / "_vendor" / "bonsai" / "ops" / "rmsnorm.wgsl"
    done = subprocess.run([sys.executable, "-I", "-c", PROBE.format(root=str(vendored), rmsnorm=str(rmsnorm))],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "// the vendored copy", "True", "bonsai.kv/nope.wgsl: shader not found", "False"]


def test_a_vendored_runtime_prefers_its_own_kernels_to_a_bonsai_on_sys_path(vendored):
    """With the canonical runtime importable too, the copy still reads its own (marked) kernel."""
    probe = PROBE.format(root=str(vendored), rmsnorm=str(RUNTIME / "ops" / "rmsnorm.wgsl"))
    probe = f"import sys; sys.path.insert(0, {str(RUNTIME.parent)!r}); import bonsai\n" + probe
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["// the vendored copy", "True"]
