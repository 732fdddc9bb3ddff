"""Warm runs reuse scan facts by content hash and never import libcst or networkx."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import bonsai_sync.scan


def _count_scans(monkeypatch) -> list[int]:
    calls = [0]
    real = bonsai_sync.scan.scan

    def counting(*args):
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(bonsai_sync.scan, "scan", counting)
    return calls


def test_unchanged_files_are_not_parsed_again(scenario, monkeypatch):
    repo = scenario("closure")
    calls = _count_scans(monkeypatch)
    repo.run("sync")
    cold = calls[0]
    assert cold == 28  # each .py file of the two closures, once
    repo.write("src/app/helpers.py", '"""Changed."""\n')
    assert repo.run("check").exit_code == 1
    assert calls[0] == cold + 1  # only the changed file
    repo.write("src/app/helpers.py", '"""Module helpers."""\n')  # back to the cached content
    os.utime(repo.root / "src/app/util.py")  # a new mtime alone is not a change
    assert repo.run("check").exit_code == 0
    assert calls[0] == cold + 1


def test_no_cache_reads_the_lock_and_rescan_parses_everything(scenario, monkeypatch):
    repo = scenario("verify")
    calls = _count_scans(monkeypatch)
    assert repo.run("sync").exit_code == 0
    assert calls[0] == 3
    shutil.rmtree(repo.root / ".bonsai-sync-cache")
    assert repo.run("--no-cache", "check").exit_code == 0
    assert calls[0] == 3  # every fact came from bonsai-sync.lock
    assert list((repo.root / ".bonsai-sync-cache").glob("*.pickle")) == []  # and nothing was cached
    assert repo.run("--rescan", "check").exit_code == 0
    assert calls[0] == 6  # neither the lock nor the cache is trusted


def _heavy_imports(repo, *args: str) -> str:
    """`check`'s exit code and which of libcst and networkx it imported, from a fresh interpreter."""
    probe = (
        "import sys\nfrom click.testing import CliRunner\nfrom bonsai_sync.cli import main\n"
        f"r = CliRunner().invoke(main, ['--root', {str(repo.root)!r}, *{list(args)!r}, 'check'])\n"
        "print(r.exit_code, sorted(m for m in ('libcst', 'networkx') if m in sys.modules))\n"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60).stdout


def test_warm_check_imports_neither_libcst_nor_networkx(scenario):
    repo = scenario("closure")
    assert repo.run("sync").exit_code == 0
    assert _heavy_imports(repo) == "0 []\n"


def test_a_cold_check_from_the_lock_imports_neither_libcst_nor_networkx(scenario):
    repo = scenario("closure")
    assert repo.run("sync").exit_code == 0
    shutil.rmtree(repo.root / ".bonsai-sync-cache")
    assert _heavy_imports(repo, "--no-cache") == "0 []\n"
    assert _heavy_imports(repo, "--rescan") == "0 ['libcst']\n"  # the probe can see an import
