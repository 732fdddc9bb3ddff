"""A sync that cannot swap one surface in says which surfaces it changed and which it left, and the
next run recovers by itself: no leftover copy blocks it."""

from __future__ import annotations

import errno
import os

import bonsai_sync.swap

CONFIG = """[tool.bonsai-sync]
source = ["src"]

[tool.bonsai-sync.surfaces.a]
dest = "surfaces/a/vendor"
entry = ["core.main"]

[tool.bonsai-sync.surfaces.b]
dest = "surfaces/b/vendor"
entry = ["core.main"]

[tool.bonsai-sync.surfaces.c]
dest = "surfaces/c/vendor"
entry = ["core.main"]
"""
FILES = {"pyproject.toml": CONFIG, "src/core/__init__.py": "", "src/core/main.py": "from . import util\n",
         "src/core/util.py": "X = 1\n"}


def _hidden(repo, surface: str) -> list[str]:
    return sorted(n for n in os.listdir(repo.root / "surfaces" / surface) if n.startswith("."))


def test_a_swap_that_fails_for_one_surface_names_what_changed_and_the_next_run_recovers(make_repo, monkeypatch):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    repo.write("src/core/util.py", "X = 2\n")
    real = bonsai_sync.swap._exchange

    def refuse_b(tree, dest):
        if "surfaces/b/" in str(dest) + "/":
            raise OSError(errno.EPERM, "Operation not permitted", str(dest / "core/util.py"))
        return real(tree, dest)

    monkeypatch.setattr(bonsai_sync.swap, "_exchange", refuse_b)
    result = repo.run("sync")
    assert result.exit_code == 2
    assert result.stderr == (
        "bonsai-sync: error: surfaces/b/vendor/core/util.py: Operation not permitted\n"
        "bonsai-sync: error: synced: a; left as they were: b, c (run `bonsai-sync sync` again once the cause "
        "is fixed)\n")
    assert "the surface was left as it was" not in result.stderr
    assert repo.read("surfaces/a/vendor/core/util.py") == "X = 2\n"
    assert repo.read("surfaces/b/vendor/core/util.py") == "X = 1\n"
    assert _hidden(repo, "b") == []  # the new tree that could not go in is gone
    monkeypatch.setattr(bonsai_sync.swap, "_exchange", real)
    assert repo.run("sync").exit_code == 0
    assert repo.run("check").exit_code == 0


def test_an_old_copy_that_cannot_be_deleted_is_a_warning_and_is_deleted_by_the_next_run(make_repo, monkeypatch):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    repo.write("src/core/util.py", "X = 2\n")
    real = bonsai_sync.swap.remove_tree

    def stuck(top):
        if "surfaces/b/.vendor.bonsai-sync-" in str(top):
            raise OSError(errno.EPERM, "Operation not permitted", str(top / "core/util.py"))
        real(top)

    monkeypatch.setattr(bonsai_sync.swap, "remove_tree", stuck)
    result = repo.run("sync")
    assert result.exit_code == 0, result.output
    assert "bonsai-sync: warning: " in result.stderr and "could not be deleted (the next sync tries again)" in result.stderr
    assert [repo.read(f"surfaces/{s}/vendor/core/util.py") for s in "abc"] == ["X = 2\n"] * 3
    assert len(_hidden(repo, "b")) == 1  # the old copy, held by the file the OS would not let go of
    repo.write("src/core/util.py", "X = 3\n")
    again = repo.run("sync")  # still stuck: a warning again, never a failure
    assert again.exit_code == 0 and "warning" in again.stderr
    monkeypatch.setattr(bonsai_sync.swap, "remove_tree", real)
    assert repo.run("sync").exit_code == 0
    assert _hidden(repo, "b") == []
    assert repo.run("check").exit_code == 0
