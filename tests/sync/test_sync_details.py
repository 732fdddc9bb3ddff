"""Issue 18.12: CPython's syntax-error positions, the source named for undecodable bytes, file
modes kept, pyproject.toml found from a subdirectory, uninstalled third-party names a warning
in --verify-import, and `why` for files from a data glob."""

from __future__ import annotations

import ast
import os
import stat

import pytest

BROKEN = ["def f(:\n    pass\n", "x = (1,\n", 'print "hi"\n', "if True:\npass\n", "a = 1\n  b = 2\n", "x = $\n",
          "class C:\n    def f(self):\n        return [1,, 2]\n"]


@pytest.mark.parametrize("text", BROKEN)
def test_syntax_errors_are_where_cpython_puts_them(make_repo, text):
    try:
        ast.parse(text)
    except SyntaxError as exc:
        where = f"src/app/main.py:{exc.lineno}:{exc.offset}: syntax error: {exc.msg}\n"
    repo = make_repo({"src/app/main.py": text})
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (3, where)


def test_undecodable_bytes_name_the_source_file(make_repo):
    repo = make_repo({"src/app/main.py": b"x = 1\n# caf\xe9\n"})
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (
        3, "src/app/main.py:2:6: not valid utf-8 (byte 0xe9); save it as UTF-8 or declare its encoding in a coding line\n")
    latin = make_repo({"src/app/main.py": b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n"}, name="latin")
    assert latin.run("sync").exit_code == 0


def test_the_executable_bit_is_kept_and_checked(make_repo):
    repo = make_repo({"src/app/main.py": "#!/usr/bin/env python3\n"})
    os.chmod(repo.root / "src/app/main.py", 0o755)
    assert repo.run("sync").exit_code == 0
    assert os.stat(repo.root / "out/vendor/app/main.py").st_mode & stat.S_IXUSR
    assert os.stat(repo.root / "out/vendor/app/__init__.py").st_mode & 0o777 == 0o644
    assert "executable = true" in repo.read("out/vendor/bonsai-sync.lock")
    os.chmod(repo.root / "src/app/main.py", 0o644)
    checked = repo.run("check")
    assert (checked.exit_code, checked.stdout) == (1, "out/vendor/app/main.py: executable bit differs from the source\n")
    assert repo.run("sync").exit_code == 0
    assert not os.stat(repo.root / "out/vendor/app/main.py").st_mode & stat.S_IXUSR


def test_pyproject_is_found_from_a_subdirectory(scenario, monkeypatch):
    from click.testing import CliRunner

    from bonsai_sync.cli import main

    repo = scenario("verify")
    monkeypatch.chdir(repo.root / "src" / "app")
    result = CliRunner().invoke(main, ["sync"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, "app: out/vendor: wrote 3, removed 0, unchanged 0\n")
    assert (repo.root / "out/vendor/app/main.py").is_file()


def test_verify_import_warns_once_for_third_party_names_not_installed(make_repo):
    repo = make_repo({"src/app/main.py": "import nowhere_installed_a\n\ndef later():\n    import nowhere_installed_b\n"},
                     'third-party = ["nowhere_installed_a", "nowhere_installed_b"]\n')
    result = repo.run("sync", "--verify-import")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "bonsai-sync: warning: out/vendor: third-party not installed, so not part of the import check: "
        "nowhere_installed_a, nowhere_installed_b",
        "bonsai-sync: warning: out/vendor: importing 'app.main' failed: ModuleNotFoundError: No module named "
        "'nowhere_installed_a'",
    ]


def test_why_explains_a_file_from_a_data_glob(scenario):
    result = scenario("closure").run("why", "app", "src/app/static/site.css")
    assert (result.exit_code, result.stdout) == (0, "app/static/site.css  (data glob 'app/static/*.css')\n")
