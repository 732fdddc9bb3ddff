"""Issue 18.10: `check --staged` checks the commit being made (git's index), as a fresh clone of
it would be, and names the synced file that is missing from the commit."""

from __future__ import annotations

import subprocess


def git(repo, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                          cwd=repo.root, capture_output=True, text=True, check=True)
    return done.stdout


def _committed(scenario):
    repo = scenario("verify")
    git(repo, "init", "-q")
    assert repo.run("sync").exit_code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "synced")
    return repo


def test_a_synced_file_left_out_of_the_commit_is_named(scenario):
    repo = _committed(scenario)
    repo.write("src/app/extra.py", '"""New module."""\n')
    repo.write("src/app/main.py", repo.read("src/app/main.py") + "from . import extra\n")
    assert repo.run("sync").exit_code == 0
    git(repo, "add", "src", "out/vendor/bonsai-sync.lock", "out/vendor/app/main.py")  # not out/vendor/app/extra.py
    assert repo.run("check").exit_code == 0  # the working tree is fresh
    staged = repo.run("check", "--staged")
    assert (staged.exit_code, staged.stdout, staged.stderr) == (1, (
        "out/vendor/app/extra.py: missing in the commit: synced in the working tree but not staged; "
        "`git add out/vendor/app/extra.py`\n"), "app: out/vendor: stale in the commit (1 file(s))\n")
    git(repo, "add", "out/vendor/app/extra.py")
    again = repo.run("check", "--staged")
    assert (again.exit_code, again.stdout) == (0, "app: out/vendor: fresh in the commit\n")


def test_a_staged_source_change_without_its_sync_is_stale(scenario):
    repo = _committed(scenario)
    repo.write("src/app/helper.py", '"""Changed upstream."""\n')
    git(repo, "add", "src/app/helper.py")
    staged = repo.run("check", "--staged")
    assert (staged.exit_code, staged.stdout) == (1, "out/vendor/app/helper.py: changed upstream\n")


def test_staged_outside_a_git_repository_is_a_usage_error(scenario):
    repo = scenario("verify")
    result = repo.run("check", "--staged")
    assert result.exit_code == 2
    assert result.stderr.startswith("bonsai-sync: error: check --staged needs a git repository: ")
