"""The pre-commit hooks this repository ships run the commands they name."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

HOOKS = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"


def test_hooks_are_sync_and_check_without_filenames(scenario):
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}
    assert sorted(hooks) == ["bonsai-sync", "bonsai-sync-check"]
    assert all(hook["pass_filenames"] is False and hook["language"] == "python" for hook in hooks.values())
    repo = scenario("verify")
    program, *args = shlex.split(hooks["bonsai-sync-check"]["entry"])
    assert program == "bonsai-sync"
    assert repo.run(*args).exit_code == 1  # nothing synced yet: stale
    program, *args = shlex.split(hooks["bonsai-sync"]["entry"])
    assert repo.run(*args).exit_code == 0
    program, *args = shlex.split(hooks["bonsai-sync-check"]["entry"])
    assert repo.run(*args).exit_code == 0
