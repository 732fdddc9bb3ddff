"""A dest holds only what bonsai-sync wrote: any other file is named and left alone unless the
user says to keep or delete it, and a dest must lie inside the repository."""

from __future__ import annotations

import os
import tomllib

import pytest

FILES = {"src/app/main.py": "from . import util\n", "src/app/util.py": "X = 1\n"}
FOREIGN = "not written by bonsai-sync (not in bonsai-sync.lock)"


def test_a_users_file_in_the_dest_before_the_first_sync_is_refused_and_kept(make_repo):
    repo = make_repo(FILES)
    repo.write("out/vendor/app_main.py", "print('mine')\n")
    dry = repo.run("sync", "--dry-run")
    result = repo.run("sync")
    assert result.exit_code == dry.exit_code == 1
    assert result.stderr == dry.stderr
    assert result.stderr.splitlines()[0] == f"bonsai-sync: error: out/vendor/app_main.py: {FOREIGN}; left as it is"
    assert "--keep-foreign" in result.stderr and "--delete-foreign" in result.stderr
    assert "out/vendor/app_main.py: would refuse" in dry.stdout
    assert repo.listing("out/vendor") == ["app_main.py"]  # nothing written, nothing removed
    assert repo.read("out/vendor/app_main.py") == "print('mine')\n"
    check = repo.run("check")
    assert check.exit_code == 1 and f"out/vendor/app_main.py: {FOREIGN}" in check.stdout


def test_a_file_in_a_dot_folder_of_the_dest_is_refused_too(make_repo):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    repo.write("out/vendor/.notes/todo.txt", "keep me\n")
    result = repo.run("sync")
    assert result.exit_code == 1 and "out/vendor/.notes/todo.txt" in result.stderr
    assert repo.read("out/vendor/.notes/todo.txt") == "keep me\n"


def test_a_file_added_after_a_sync_is_refused_then_kept_when_told(make_repo):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    repo.write("out/vendor/app/notes.md", "mine\n")
    repo.write("src/app/util.py", "X = 2\n")
    assert repo.run("sync").exit_code == 1
    assert repo.read("out/vendor/app/util.py") == "X = 1\n"  # refused as a whole: nothing written
    result = repo.run("sync", "--keep-foreign")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "out/vendor/app/notes.md: kept (not written by bonsai-sync)"
    assert repo.read("out/vendor/app/notes.md") == "mine\n" and repo.read("out/vendor/app/util.py") == "X = 2\n"
    lock = tomllib.loads(repo.read("out/vendor/bonsai-sync.lock"))
    assert lock["foreign"] == [{"path": "app/notes.md"}]
    assert repo.run("check").exit_code == 0  # a kept file is the user's: not stale
    repo.write("src/app/util.py", "X = 3\n")
    assert repo.run("sync").exit_code == 0  # and a later sync keeps it without being told again
    assert repo.read("out/vendor/app/notes.md") == "mine\n"
    repo.write("out/vendor/app/more.md", "")
    assert repo.run("sync").exit_code == 1  # a new one is refused again


def test_delete_foreign_deletes_with_a_listing(make_repo):
    repo = make_repo(FILES)
    repo.write("out/vendor/app/main.py", "# the user's own main\n")  # at a path the closure needs
    repo.write("out/vendor/stray.txt", "")
    keep = repo.run("sync", "--keep-foreign")  # a file the closure needs cannot be kept
    assert keep.exit_code == 1
    assert keep.stderr.splitlines()[0] == ("bonsai-sync: error: out/vendor/app/main.py: not written by bonsai-sync "
                                           "(not in bonsai-sync.lock), and the closure needs this path; left as it is")
    assert repo.read("out/vendor/app/main.py") == "# the user's own main\n"
    dry = repo.run("sync", "--delete-foreign", "--dry-run")
    assert dry.exit_code == 0 and "out/vendor/stray.txt: would delete (not written by bonsai-sync" in dry.stdout
    assert dry.stdout.splitlines()[-1] == ("app: out/vendor: would write 2, would remove 0, would delete 2 not "
                                           "written by bonsai-sync, unchanged 0")
    assert repo.read("out/vendor/app/main.py") == "# the user's own main\n"  # a dry run writes nothing
    result = repo.run("sync", "--delete-foreign")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == ["out/vendor/app/main.py: deleted (not written by bonsai-sync)",
                                              "out/vendor/stray.txt: deleted (not written by bonsai-sync)"]
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/main.py", "app/util.py", "bonsai-sync.lock"]
    assert repo.read("out/vendor/app/main.py") == FILES["src/app/main.py"]


def test_a_dest_whose_lock_was_lost_keeps_identical_copies_without_asking(make_repo):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    (repo.root / "out/vendor/bonsai-sync.lock").unlink()
    assert repo.run("sync").exit_code == 0  # the same bytes: nothing of the user's to lose
    assert repo.run("check").exit_code == 0


@pytest.mark.parametrize(("dest", "message"), [
    ("../victim", "'../victim' resolves to {outside}, outside the repository"),
    ("{absolute}", "'{absolute}' is absolute"),
    (".", "'.' is the repository itself"),
])
def test_a_dest_outside_the_repository_is_a_config_error(make_repo, tmp_path, dest, message):
    victim = tmp_path / "victim"
    (victim / "docs").mkdir(parents=True)
    (victim / "docs/thesis.txt").write_text("years of work\n")
    dest = dest.format(absolute=victim)
    repo = make_repo(FILES)
    repo.edit_config('dest = "out/vendor"', f'dest = "{dest}"')
    result = repo.run("sync")
    assert result.exit_code == 2
    expected = message.format(outside=victim, absolute=victim)
    assert result.stderr.startswith(f"pyproject.toml:5:1: [tool.bonsai-sync.surfaces.app] dest: {expected}")
    assert (victim / "docs/thesis.txt").read_text() == "years of work\n"


def test_a_dest_behind_a_link_out_of_the_repository_is_a_config_error(make_repo, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    repo = make_repo(FILES)
    os.symlink(outside, repo.root / "out")
    result = repo.run("sync")
    assert result.exit_code == 2
    assert f"'out/vendor' resolves to {outside / 'vendor'}, outside the repository" in result.stderr
    assert not (outside / "vendor").exists()
