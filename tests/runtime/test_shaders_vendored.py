"""Kernels load from the runtime copy they belong to, wherever that copy is imported from.

Surfaces vendor the runtime inside their own package (`bonsai_tenant._vendor.bonsai`). Every module
names its kernels' package by `__package__` and includes are relative, so a vendored copy reads
its own WGSL, never that of another `bonsai` on sys.path (nor fails to find it).
"""

from __future__ import annotations

import ast
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
from surface._vendor.bonsai.kv import attention
text = shaders.load_source(attention.__package__, "serial.wgsl")
print(text.count("// the vendored copy"))
print("bonsai" in sys.modules)
"""


@pytest.fixture
def vendored(tmp_path: Path) -> Path:
    """tmp/surface/_vendor/bonsai: the runtime copied inside a package, one included kernel marked."""
    (tmp_path / "surface").mkdir()
    (tmp_path / "surface" / "__init__.py").write_text("")
    copy = tmp_path / "surface" / "_vendor" / "bonsai"
    shutil.copytree(RUNTIME, copy, ignore=shutil.ignore_patterns("__pycache__"))
    row_format = copy / "kv" / "format" / "row_format.wgsl"
    row_format.write_text("// the vendored copy\n" + row_format.read_text())
    return tmp_path


@pytest.mark.parametrize("with_canonical", [False, True])
def test_a_vendored_runtime_reads_its_own_kernels_and_includes(vendored, with_canonical):
    """In an isolated interpreter, with or without the canonical runtime importable beside it."""
    probe = PROBE.format(root=str(vendored))
    if with_canonical:
        probe = f"import sys; sys.path.insert(0, {str(RUNTIME.parent)!r}); import bonsai\n" + probe
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", str(with_canonical)]  # the copy's include, once


def literal_kernel_packages(root: Path) -> list[str]:
    """`file:line` of every kernel lookup whose package is a string literal (it would not move with a copy)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
                    and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("kernel", "load_source")
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_module_names_its_kernels_package_literally():
    assert literal_kernel_packages(RUNTIME) == []


def test_the_literal_check_catches_a_hardcoded_package(tmp_path):
    """Mutation: a driver that names "bonsai.ops" again must be reported."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "argmax.py").write_text('def f(gpu):\n    return gpu.kernel("bonsai.ops", "argmax.wgsl")\n')
    assert literal_kernel_packages(tmp_path) == ["ops/argmax.py:2"]
