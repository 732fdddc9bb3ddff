"""What a newcomer meets first: options after the subcommand, `why` on a file of the copy, a dest
that is a file, a dest inside a package, and `build` where no surface has a bundle."""

from __future__ import annotations

import os

from click.testing import CliRunner

from bonsai_sync.cli import main

FILES = {"src/app/main.py": "from . import util\n", "src/app/util.py": "X = 1\n"}


def test_global_options_are_accepted_after_the_subcommand(make_repo, tmp_path, monkeypatch):
    repo = make_repo(FILES)
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here: only --root finds the repository
    runner = CliRunner()
    synced = runner.invoke(main, ["sync", "--root", str(repo.root), "--no-cache", "--wait", "5"])
    assert synced.exit_code == 0, synced.output
    assert not (repo.root / ".bonsai-sync-cache/facts").exists()  # --no-cache after the subcommand took effect
    checked = runner.invoke(main, ["check", "--root", str(repo.root), "--rescan"])
    assert (checked.exit_code, checked.stdout) == (0, "app: out/vendor: fresh\n")
    assert runner.invoke(main, ["why", "app", "app.util", "--root", str(repo.root)]).exit_code == 0


def test_why_takes_a_path_inside_the_dest(make_repo):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    by_module = repo.run("why", "app", "app.util")
    by_copy = repo.run("why", "app", "out/vendor/app/util.py")
    assert by_copy.exit_code == 0, by_copy.output
    assert by_copy.stdout == by_module.stdout == "app.main  (entry)\n  -> app.util  (src/app/main.py:1:1, from)\n"
    assert repo.run("why", "app", str(repo.root / "out/vendor/app/util.py")).stdout == by_module.stdout


def test_check_on_a_dest_that_is_a_file_says_so(make_repo):
    repo = make_repo(FILES)
    repo.write("out/vendor", "notes\n")
    result = repo.run("check")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("bonsai-sync: error: out/vendor: is a file, not a folder; the dest of surface 'app' is a "
                             "folder that bonsai-sync alone writes: move the file away, or set `dest` to another path\n")


def test_a_dest_inside_a_package_gives_one_summary_not_an_error_per_import(make_repo):
    modules = {f"src/core/m{i}.py": f"import core.m{i + 1}\n" for i in range(8)}
    repo = make_repo({**modules, "src/core/__init__.py": "", "src/core/m8.py": "",
                      "src/app/main.py": "import core.m0\n", "pkg/app_a/__init__.py": ""})
    repo.edit_config('dest = "out/vendor"', 'dest = "pkg/app_a/_vendor"')
    result = repo.run("sync")
    assert result.exit_code == 3
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pkg/app_a/_vendor:1:1: 9 imports in 9 files of the copy import its own packages "
                               "absolutely, but the dest lies inside package 'app_a._vendor'")
    assert lines[0].endswith("(first: pkg/app_a/_vendor/app/main.py:1:1)")


def test_a_few_absolute_imports_inside_a_package_are_each_named(make_repo):
    repo = make_repo({**FILES, "src/app/main.py": "import app.util\n", "pkg/app_a/__init__.py": ""})
    repo.edit_config('dest = "out/vendor"', 'dest = "pkg/app_a/_vendor"')
    result = repo.run("sync")
    assert result.exit_code == 3
    assert result.stderr.startswith("pkg/app_a/_vendor/app/main.py:1:1: imports 'app.util' absolutely")


def test_build_where_no_surface_has_a_bundle_says_so(make_repo):
    repo = make_repo(FILES)
    result = repo.run("build")
    assert result.exit_code == 2
    assert result.stderr.startswith("bonsai-sync: error: no bundle kind for surface(s) app: ")
    assert not (repo.root / "out").exists() and not os.path.exists(repo.root / "dist")  # nothing synced or built
    named = repo.run("build", "--surface", "app")
    assert named.exit_code == 2 and "no bundle kind for surface(s) app" in named.stderr


WHEEL_PROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "app-a"
version = "1.0"

[tool.setuptools.packages.find]
where = ["src"]
"""


def test_build_makes_the_bundle_kind_a_users_surface_declares(make_repo):
    import zipfile

    repo = make_repo({**FILES, "surfaces/a/pyproject.toml": WHEEL_PROJECT,
                      "surfaces/a/src/app_a/__init__.py": "from ._vendor.app import main\n"})
    repo.edit_config('dest = "out/vendor"', 'dest = "surfaces/a/src/app_a/_vendor"\nbundle = "wheel"')
    result = repo.run("build")
    assert result.exit_code == 0, result.output
    wheel = repo.root / "dist/app_a-1.0-py3-none-any.whl"
    assert result.stdout.splitlines()[-1].startswith("app: dist/app_a-1.0-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"app_a/__init__.py", "app_a/_vendor/app/main.py", "app_a/_vendor/app/util.py"} <= set(names)
    assert "app_a/_vendor/bonsai-sync.lock" not in names


def test_an_unknown_bundle_kind_is_a_config_error(make_repo):
    repo = make_repo(FILES, 'bundle = "msi"\n')
    result = repo.run("sync")
    assert result.exit_code == 2
    assert result.stderr == ("pyproject.toml:7:1: [tool.bonsai-sync.surfaces.app] bundle: must be one of 'zipapp', "
                             "'wheel', 'extension'\n")
