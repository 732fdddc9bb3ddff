"""Issue 18.6: an operating-system problem is one line naming the path (exit 2, or 3 for a tree
too deep to follow), never a traceback, and the surface is left as it was."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest


def _synced(scenario):
    repo = scenario("verify")
    assert repo.run("sync").exit_code == 0
    repo.write("src/app/helper.py", '"""Changed upstream."""\n')
    return repo, {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")}


def _fail(exc: OSError):
    def fail(*args, **kwargs):
        raise exc

    return fail


@pytest.mark.parametrize(("target", "exc", "message"), [
    ("tempfile.mkdtemp", PermissionError(errno.EACCES, "Permission denied", "{root}/out"), "out: Permission denied"),
    ("bonsai_sync.swap._exchange", PermissionError(errno.EPERM, "Operation not permitted", "{root}/out/vendor"),
     "out/vendor: Operation not permitted"),
    ("bonsai_sync.write.os.chmod", OSError(errno.ENOSPC, "No space left on device", "{root}/out/x"),
     "out/x: No space left on device"),
])
def test_a_refusing_file_system_is_one_line_and_leaves_the_surface(scenario, monkeypatch, target, exc, message):
    repo, before = _synced(scenario)
    exc.filename = exc.filename.format(root=repo.root)
    monkeypatch.setattr(target, _fail(exc))
    result = repo.run("sync")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"bonsai-sync: error: {message}; the surface was left as it was\n"
    assert {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")} == before
    assert sorted(os.listdir(repo.root / "out")) == ["vendor"]  # no temporary tree left behind


def test_an_immutable_destination_is_refused_in_one_line(scenario):
    repo, before = _synced(scenario)
    dest = repo.root / "out/vendor"
    if subprocess.run(["chattr", "+i", str(dest)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here; the injected EPERM case above covers the code path")
    try:
        result = repo.run("sync")
    finally:
        subprocess.run(["chattr", "-i", str(dest)], check=True)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("bonsai-sync: error: out/vendor")
    assert {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")} == before


@pytest.mark.parametrize(("path", "message"), [
    ("out", "out: is a file, and the dest out/vendor needs a folder there"),
    ("out/vendor", "out/vendor: is a file, not a folder; the dest of surface 'app' is a folder that bonsai-sync "
                   "alone writes: move the file away, or set `dest` to another path"),
])
def test_a_file_where_the_dest_or_its_parent_should_be_is_refused_not_moved_aside(scenario, path, message):
    repo = scenario("verify")
    repo.write(path, "somebody's notes\n")
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (2, f"bonsai-sync: error: {message}\n")
    assert repo.read(path) == "somebody's notes\n"
    assert [n for n in os.listdir((repo.root / path).parent) if "bonsai-sync-new" in n] == []  # nothing moved aside


@pytest.mark.parametrize("link", ["loop", "up"])
def test_a_symlink_loop_anywhere_in_a_source_root(scenario, link):
    repo = scenario("verify")
    (repo.root / "src/junk").mkdir()
    os.symlink("loop" if link == "loop" else "..", repo.root / f"src/junk/{link}")
    result = repo.run("sync")
    what = "symlink loop" if link == "loop" else "symlink cycle (the link points at a folder above it)"
    assert (result.exit_code, result.stderr) == (2, f"bonsai-sync: error: src/junk/{link}: {what}; the surface was left as it was\n")
    assert not (repo.root / "out").exists()


def test_a_source_root_outside_the_repository(scenario, tmp_path):
    repo = scenario("verify")
    (tmp_path / "elsewhere").mkdir()
    repo.edit_config('source = ["src"]', 'source = ["src", "../elsewhere"]')
    result = repo.run("sync")
    assert result.exit_code == 2
    assert result.stderr == (f"pyproject.toml:2:1: [tool.bonsai-sync] source: source root '../elsewhere' is outside the "
                             f"repository {repo.root.resolve()}; copy or link its packages into a folder of the repository\n")


def test_a_package_tree_1200_deep(make_repo):
    from bonsai_sync.fsutil import remove_tree, walk_files

    depth = 1200
    files = {f"src/app/{'/'.join(['d'] * i)}/__init__.py": "" for i in range(1, depth + 1)}
    repo = make_repo({**files, "src/app/main.py": "import " + ".".join(["app"] + ["d"] * depth) + "\n"})
    try:
        result = repo.run("sync")
        assert (result.exit_code, result.stderr) == (0, "")
        assert len(list(walk_files(repo.root / "out/vendor"))) == depth + 3
        assert repo.run("check").exit_code == 0
    finally:
        remove_tree(repo.root)  # pytest's own clean-up recurses per level and would fail on it


def test_a_temporary_tree_name_is_unique_per_run(scenario):
    from bonsai_sync.plan import Plan
    from bonsai_sync.write import stage

    repo = scenario("verify")
    plan = Plan("app", "out/vendor", ())
    first, second = stage(repo.root, plan, ""), stage(repo.root, plan, "")
    assert first != second and first.parent == second.parent == repo.root / "out"
    assert first.name.startswith(".vendor.bonsai-sync-new-")
