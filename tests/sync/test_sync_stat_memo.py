"""A warm run hashes only files whose stat changed since a run hashed them (git's racy-clean rule), and
an edit that keeps the size and puts the mtime back is still found: ctime moves, and it is in the key."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest

import bonsai_sync.plan.statmemo
from bonsai_sync.plan.statmemo import StatMemo

FILES = {"src/app/main.py": "from . import a\n", "src/app/a.py": "A = 1\n"}


@pytest.fixture
def trusting(monkeypatch):
    """Stamps count as old at once (a test cannot wait RACY_NS for each file)."""
    monkeypatch.setattr(bonsai_sync.plan.statmemo, "RACY_NS", -10**18)


def _hashed(monkeypatch) -> list[int]:
    """Counts files each Workspace's memo hashed, run by run."""
    counts: list[int] = []
    real = StatMemo.__init__

    def init(self, old):
        real(self, old)
        counts.append(0)
        original = self.digest

        def digest(path, info):
            before = self.hashed
            found = original(path, info)
            counts[-1] += self.hashed - before
            return found

        self.digest = digest

    monkeypatch.setattr(StatMemo, "__init__", init)
    return counts


def test_a_warm_check_hashes_nothing_and_an_edit_is_found(make_repo, monkeypatch, trusting):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    assert repo.run("check").exit_code == 0
    counts = _hashed(monkeypatch)
    assert repo.run("check").exit_code == 0
    assert counts == [0]
    time.sleep(0.05)  # past the kernel's coarse timestamp tick
    path = repo.root / "src/app/a.py"
    before = os.stat(path)
    path.write_text("A = 2\n")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the old mtime
    assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    result = repo.run("check")
    assert result.exit_code == 1
    assert "out/vendor/app/a.py: changed upstream" in result.output
    assert counts[-1] == 1  # only the edited file was read


def test_a_memo_keyed_without_ctime_is_caught(make_repo, monkeypatch, trusting):
    """Mutation: trusting size and mtime alone (what `make` does) misses the edit above."""
    real = StatMemo.digest

    def blind(self, path, info):
        fake = SimpleNamespace(st_dev=info.st_dev, st_ino=info.st_ino, st_size=info.st_size,
                               st_mtime_ns=info.st_mtime_ns, st_ctime_ns=0, st_mode=info.st_mode)
        return real(self, path, fake)

    monkeypatch.setattr(StatMemo, "digest", blind)
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    assert repo.run("check").exit_code == 0
    time.sleep(0.05)
    path = repo.root / "src/app/a.py"
    before = os.stat(path)
    path.write_text("A = 2\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert repo.run("check").exit_code == 0  # the stale copy passes: the test above is what catches this


def test_files_changed_just_before_a_run_are_not_remembered(tmp_path):
    """The racy rule: a stamp younger than RACY_NS at hashing time is never trusted later."""
    path = tmp_path / "f.py"
    path.write_text("x = 1\n")
    memo = StatMemo(None)
    memo.digest(str(path), os.stat(path))
    assert memo.new == {}
    old = tmp_path / "g.py"
    old.write_text("y = 1\n")
    memo = StatMemo(None)
    memo.start += 2 * bonsai_sync.plan.statmemo.RACY_NS  # as if the run came long after the write
    memo.digest(str(old), os.stat(old))
    assert list(memo.new) == [str(old)]


def test_no_cache_reads_every_file(make_repo, monkeypatch):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    counts = _hashed(monkeypatch)
    assert repo.run("--no-cache", "check").exit_code == 0
    assert counts == []  # no memo at all: digest_tree hashes every file
