"""Vendoring a slice of a real third-party package (pygments) and using it from the copy alone."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pygments = pytest.importorskip("pygments")

CONFIG = """
[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.demo]
dest = "out/vendor"
entry = ["pygments", "pygments.lexers", "pygments.formatters"]
"""
HINTS = 'hidden-imports = ["pygments.lexers.python", "pygments.formatters.html", "pygments.styles.default"]\n'
USE = """
import sys
sys.path[:0] = [sys.argv[1]]
from pygments import highlight
from pygments.formatters import get_formatter_by_name
from pygments.lexers import get_lexer_by_name
import pygments
print(highlight("x = 1", get_lexer_by_name("python"), get_formatter_by_name("html")), end="")
print(pygments.__file__)
"""


@pytest.fixture
def repo(repo_at, tmp_path: Path):
    root = tmp_path / "pygments-repo"
    shutil.copytree(Path(pygments.__file__).parent, root / "src/pygments", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pyproject.toml").write_text(CONFIG)
    return repo_at(root)


def test_without_hints_every_non_literal_import_is_reported_at_its_line(repo):
    result = repo.run("sync")
    assert result.exit_code == 3
    sites = [re.match(r"(.+?):(\d+):(\d+): (.*)", line).groups() for line in result.stderr.splitlines()]
    assert {path for path, *_ in sites} == {  # styles' __import__ sits in try/except ImportError: still reported
        "src/pygments/formatters/__init__.py",
        "src/pygments/lexers/__init__.py",
        "src/pygments/styles/__init__.py",
    }
    assert any(path.endswith("styles/__init__.py") and "inside try/except ImportError" in message
               for path, _, _, message in sites)
    for path, line, col, message in sites:
        code = repo.read(path).splitlines()[int(line) - 1][int(col) - 1 :]
        assert code.startswith("__import__("), (path, line, code)
        assert message.startswith("cannot follow ")
    assert not (repo.root / "out").exists()


def test_with_hints_the_copy_imports_and_runs_on_its_own(repo):
    repo.write("pyproject.toml", repo.read("pyproject.toml") + HINTS)
    result = repo.run("sync", "--verify-import")
    assert result.exit_code == 0, result.output
    copied = repo.listing("out/vendor")
    assert "pygments/lexers/python.py" in copied and "pygments/lexers/rust.py" not in copied
    dest = repo.root / "out/vendor"
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", USE, str(dest)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    html, origin = proc.stdout.rsplit("\n", 2)[0], proc.stdout.splitlines()[-1]
    assert '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>' in html
    assert origin == str(dest / "pygments/__init__.py")
