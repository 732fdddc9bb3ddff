"""Issues 18.7 and 18.8: one lock per surface, unique temporary trees, and a swap that never
leaves the dest missing (or that the next run finishes or rolls back)."""

from __future__ import annotations

import os
import subprocess
import sys

KILL = """
import os, signal, sys
import bonsai_sync.write.swap as swap
real_exchange, real_rename = swap._exchange, os.rename
if sys.argv[1] == "after-exchange":
    def exchange(a, b):
        real_exchange(a, b)
        os.kill(os.getpid(), signal.SIGKILL)
    swap._exchange = exchange
else:  # a file system without RENAME_EXCHANGE, killed between the two renames
    swap._exchange = lambda a, b: False
    def rename(src, dst):
        real_rename(src, dst)
        if ".bonsai-sync-old-" in os.fspath(dst):
            os.kill(os.getpid(), signal.SIGKILL)
    os.rename = rename
from bonsai_sync.cli import main
main(["--root", sys.argv[2], "sync"], prog_name="bonsai-sync")
"""


def _changed(scenario):
    repo = scenario("verify")
    assert repo.run("sync").exit_code == 0
    repo.write("src/app/helper.py", '"""Changed upstream."""\n')
    return repo


def _killed(repo, mode: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-c", KILL, mode, str(repo.root)], env=env, capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr


def test_a_kill_right_after_the_exchange_leaves_a_complete_dest(scenario, child_env):
    repo = _changed(scenario)
    _killed(repo, "after-exchange", child_env())
    assert repo.read("out/vendor/app/helper.py") == '"""Changed upstream."""\n'  # never missing, never mixed
    assert [n for n in os.listdir(repo.root / "out") if n != "vendor"] != []  # the old tree, not yet removed
    assert repo.run("sync").exit_code == 0
    assert os.listdir(repo.root / "out") == ["vendor"]
    assert repo.run("check").exit_code == 0


def test_a_kill_between_two_renames_is_rolled_back_by_the_next_run(scenario, child_env):
    repo = _changed(scenario)
    _killed(repo, "between-renames", child_env())
    assert not (repo.root / "out/vendor").exists()
    checked = repo.run("check")
    assert checked.exit_code == 1 and checked.stdout.startswith("out/vendor: an interrupted sync left the surface")
    result = repo.run("sync")
    assert result.exit_code == 0, result.stderr
    assert os.listdir(repo.root / "out") == ["vendor"]  # no .vendor.bonsai-sync-new/-old left
    assert repo.read("out/vendor/app/helper.py") == '"""Changed upstream."""\n'
    assert repo.run("check").exit_code == 0


def test_the_dest_is_never_renamed_away_where_the_exchange_works(scenario, monkeypatch):
    import bonsai_sync.write.swap as swap

    repo = _changed(scenario)
    dest = repo.root / "out/vendor"
    moved_away = []
    real_rename = os.rename

    def rename(src, dst):
        if os.fspath(src) == os.fspath(dest):
            moved_away.append(dst)
        real_rename(src, dst)

    monkeypatch.setattr(swap.os, "rename", rename)
    assert repo.run("sync").exit_code == 0
    assert moved_away == []
    assert repo.read("out/vendor/app/helper.py") == '"""Changed upstream."""\n'


def test_a_second_sync_waits_for_the_lock_then_says_another_is_running(scenario):
    from bonsai_sync.write.locking import surface_lock

    repo = _changed(scenario)
    with surface_lock(repo.root / ".bonsai-sync-cache/locks", "app", True, 0):
        result = repo.run("--wait", "0.2", "sync")
        checked = repo.run("--wait", "0.2", "check")
    lock = repo.root / ".bonsai-sync-cache/locks/app.lock"
    message = (f"bonsai-sync: error: app: another bonsai-sync is running on this surface (lock {lock}); "
               "wait for it to finish and run again\n")
    assert (result.exit_code, result.stderr) == (2, message)
    assert (checked.exit_code, checked.stderr) == (2, message)
    assert repo.read("out/vendor/app/helper.py") != '"""Changed upstream."""\n'
    assert repo.run("sync").exit_code == 0


def test_concurrent_syncs_and_checks_all_end_cleanly(scenario, child_env):
    repo = scenario("closure")
    env = child_env()
    command = [sys.executable, "-m", "bonsai_sync", "--root", str(repo.root)]
    procs = [subprocess.Popen(command + ["sync" if i % 3 else "check"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(6)]
    results = [(p.communicate(timeout=120)[1], p.returncode) for p in procs]
    assert [stderr for stderr, _ in results if "Traceback" in stderr] == []
    assert [code for _, code in results if code not in (0, 1)] == []  # a check may see the first sync pending
    assert sorted(os.listdir(repo.root / "out")) == ["leaf", "vendor"]
    assert repo.run("check").exit_code == 0
