"""A stranger's monorepo, as a new user sets it up: a git repository whose src/ holds its own `core`
package and real packages from this environment (pygments, PyYAML, as `pip --target` leaves them),
and two surfaces. Each scenario is one way a sync could lose the user's work or call a broken copy
complete."""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

import bonsai_sync.swap
from tests.sync.test_sync_vendor_packages import _install_into

pytest.importorskip("pygments")

CONFIG = """[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.a]
dest = "surfaces/a/src"
entry = ["core.render"]

[tool.bonsai-sync.surfaces.b]
dest = "surfaces/b/vendor"
entry = ["core.config"]
hidden-imports = {"yaml/constructor.py:534" = [], "yaml/constructor.py:554" = []}
"""
HINTS = ('hidden-imports = ["pygments.lexers.python", "pygments.formatters.html", "pygments.styles.default"]\n')
RENDER = """from pygments import highlight
from pygments.formatters import get_formatter_by_name
from pygments.lexers import get_lexer_by_name
from pygments.styles import get_style_by_name


def render(code):
    style = get_style_by_name("default")
    return highlight(code, get_lexer_by_name("python"), get_formatter_by_name("html", style=style))
"""
USE = """
import sys
sys.path[:] = [sys.argv[1]] + [p for p in sys.path if "-packages" not in p]
from core.render import render
assert '<span class="mi">1</span>' in render("x = 1")
"""


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def monorepo(repo_at, tmp_path):
    root = tmp_path / "mono"
    _install_into(root / "src", ["Pygments", "PyYAML"])
    repo = repo_at(root)
    repo.write("src/core/__init__.py", "")
    repo.write("src/core/render.py", RENDER)
    repo.write("src/core/config.py", "import yaml\n\n\ndef read(text):\n    return yaml.safe_load(text)\n")
    repo.write("surfaces/a/src/app_a/main.py", "from core.render import render\nprint(render('x = 1'))\n")
    repo.write("pyproject.toml", CONFIG)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=u", "-c", "user.email=u@example.invalid", "commit", "-qm", "start")
    return repo


def _with_hints(repo):
    repo.edit_config('entry = ["core.render"]\n', f'entry = ["core.render"]\n{HINTS}')


def test_a_users_file_in_the_dest_is_never_deleted(monorepo):
    _with_hints(monorepo)
    for args in (("sync", "--dry-run"), ("sync",)):
        result = monorepo.run(*args)
        assert result.exit_code == 1
        assert "surfaces/a/src/app_a/main.py: not written by bonsai-sync" in result.stderr
    assert _git(monorepo.root, "status", "--porcelain", "surfaces") == ""  # nothing written, nothing removed
    assert monorepo.run("sync", "--keep-foreign").exit_code == 0
    assert _git(monorepo.root, "diff", "--stat", "surfaces/a/src/app_a") == ""  # the user's file, as it was
    assert monorepo.run("check").exit_code == 0


def test_a_dest_outside_the_repository_is_refused(monorepo, tmp_path):
    (tmp_path / "victim/docs").mkdir(parents=True)
    (tmp_path / "victim/docs/thesis.txt").write_text("years of work\n")
    monorepo.edit_config('dest = "surfaces/b/vendor"', 'dest = "../victim"')
    result = monorepo.run("sync", "--delete-foreign")
    assert result.exit_code == 2 and "outside the repository" in result.stderr
    assert (tmp_path / "victim/docs/thesis.txt").read_text() == "years of work\n"


def test_a_globals_comment_does_not_hide_a_missing_name(monorepo):
    monorepo.write("src/core/m.py", "X = 1\n# do not use globals() here\n")
    monorepo.write("src/core/config.py", "from core.m import Y\n")
    result = monorepo.run("sync", "--surface", "b")
    assert result.exit_code == 3 and "src/core/config.py:1:1: " in result.stderr and "'Y'" in result.stderr


def test_an_optional_non_literal_import_needs_its_hint_and_then_the_copy_works(monorepo):
    (monorepo.root / "surfaces/a/src/app_a/main.py").unlink()
    result = monorepo.run("sync", "--surface", "a")
    assert result.exit_code == 3
    assert ("src/pygments/styles/__init__.py:" in result.stderr
            and "inside try/except ImportError; declare its targets in `hidden-imports` of surface 'a'" in result.stderr)
    _with_hints(monorepo)
    assert monorepo.run("sync", "--surface", "a", "--verify-import").exit_code == 0
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", USE, str(monorepo.root / "surfaces/a/src")],
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_a_file_the_tool_cannot_replace_names_what_changed_and_the_next_run_recovers(monorepo, monkeypatch):
    _with_hints(monorepo)
    assert monorepo.run("sync", "--keep-foreign").exit_code == 0
    monorepo.write("src/core/__init__.py", '"""Core."""\n')
    real = bonsai_sync.swap._exchange

    def stuck(tree, dest):  # what an immutable file (chattr +i) in surface b does to the swap
        if "surfaces/b" in str(dest):
            raise OSError(errno.EPERM, "Operation not permitted", str(dest / "yaml/__init__.py"))
        return real(tree, dest)

    monkeypatch.setattr(bonsai_sync.swap, "_exchange", stuck)
    result = monorepo.run("sync")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith("bonsai-sync: error: synced: a; left as they were: b")
    monkeypatch.setattr(bonsai_sync.swap, "_exchange", real)
    assert monorepo.run("sync").exit_code == 0 and monorepo.run("check").exit_code == 0


def test_a_dest_inside_a_package_gets_one_summary(monorepo):
    _with_hints(monorepo)
    monorepo.write("surfaces/a/pkg/app_a/__init__.py", "")
    monorepo.edit_config('dest = "surfaces/a/src"', 'dest = "surfaces/a/pkg/app_a/_vendor"')
    result = monorepo.run("sync", "--surface", "a")
    assert result.exit_code == 3
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("surfaces/a/pkg/app_a/_vendor:1:1: ")
    assert "import its own packages absolutely, but the dest lies inside package 'app_a._vendor'" in result.stderr
