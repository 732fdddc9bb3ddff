"""The pre-commit hooks this repository ships run the commands they name."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

HOOKS = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"


def test_hooks_are_sync_and_check_without_filenames(scenario):
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}
    assert sorted(hooks) == ["bonsai-sync", "bonsai-sync-check"]
    assert all(hook["pass_filenames"] is False and hook["language"] == "python" for hook in hooks.values())
    repo = scenario("verify")
    subprocess.run(["git", "init", "-q"], cwd=repo.root, check=True)
    subprocess.run(["git", "add", "src", "pyproject.toml"], cwd=repo.root, check=True)
    program, *args = shlex.split(hooks["bonsai-sync-check"]["entry"])
    assert (program, args) == ("bonsai-sync", ["check", "--staged"])  # the commit, not the working tree
    assert repo.run(*args).exit_code == 1  # nothing synced yet: stale
    program, *args = shlex.split(hooks["bonsai-sync"]["entry"])
    assert repo.run(*args).exit_code == 0
    program, *args = shlex.split(hooks["bonsai-sync-check"]["entry"])
    assert repo.run(*args).exit_code == 1  # synced, but not staged
    subprocess.run(["git", "add", "-A"], cwd=repo.root, check=True)
    assert repo.run(*args).exit_code == 0


def test_this_repositorys_own_hook_checks_the_index():
    config = yaml.safe_load((HOOKS.parent / ".pre-commit-config.yaml").read_text())
    local = next(r for r in config["repos"] if r["repo"] == "local")
    (hook,) = [h for h in local["hooks"] if h["id"] == "bonsai-sync-check"]
    assert hook["entry"] == "bonsai-sync check --staged"
