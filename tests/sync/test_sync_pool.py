"""Issue 20: a cold run parses in a process pool when many files wait; the facts, the copy, the lock
and every message are the same as parsing in one process, and a file that changes under a worker
is an error, never facts cached under the wrong bytes."""

from __future__ import annotations

import hashlib

import pytest

import bonsai_sync.scan.pool as scanpool
from bonsai_sync.errors import FatalError
from bonsai_sync.scan.facts import Facts


def _counting(monkeypatch) -> dict[str, int]:
    """Count the files parsed inline and in workers, over every Parser of the test."""
    parsed = {"inline": 0, "pool": 0}
    real_close = scanpool.Parser.close

    def close(self):
        for how, count in self.parsed.items():
            parsed[how] += count
        real_close(self)

    monkeypatch.setattr(scanpool.Parser, "close", close)
    return parsed


def _run(repo, monkeypatch, pool: bool, *args: str):
    """Run the CLI with a pool forced on (two workers from the second waiting file) or off."""
    monkeypatch.setattr(scanpool, "POOL_MIN", 2 if pool else 10**9)
    monkeypatch.setattr(scanpool, "PER_WORKER", 1)
    monkeypatch.setattr(scanpool, "cpus", lambda: 2)
    return repo.run("--no-cache", *args)


BROKEN = {"src/app/helpers.py": b"def f(:\n", "src/app/lazy.py": b"x = '\xff'\n"}  # a syntax error, undecodable bytes


@pytest.mark.parametrize(("name", "breaks"), [("closure", {}), ("closure", BROKEN), ("unresolved", {})])
def test_a_pool_gives_what_one_process_gives(scenario, repo_at, monkeypatch, name, breaks):
    first = scenario(name).root
    pooled = repo_at(first.rename(first.with_name("pooled")))
    alone = scenario(name)
    for repo in (pooled, alone):
        for rel, data in breaks.items():
            (repo.root / rel).write_bytes(data)
    parsed = _counting(monkeypatch)
    one = _run(alone, monkeypatch, False, "sync")
    assert parsed["pool"] == 0 and parsed["inline"] >= 3
    many = _run(pooled, monkeypatch, True, "sync")
    assert parsed["pool"] >= parsed["inline"] - 1  # all but the first file went to the workers
    assert (many.exit_code, many.stdout, many.stderr) == (one.exit_code, one.stdout, one.stderr)
    assert not breaks or ("syntax error" in one.stderr and "cannot decode" in one.stderr and one.exit_code == 3)
    assert pooled.listing("out") == alone.listing("out")
    for rel in alone.listing("out"):
        assert pooled.read(f"out/{rel}") == alone.read(f"out/{rel}")


def test_a_file_that_is_not_the_bytes_it_was_keyed_by_is_an_error(tmp_path, monkeypatch):
    path = tmp_path / "mod.py"
    path.write_text("import json\n")
    good = f"{hashlib.sha256(b'import json' + bytes([10])).hexdigest()}:3.11"
    stale = f"{hashlib.sha256(b'import os' + bytes([10])).hexdigest()}:3.11"
    monkeypatch.setattr(scanpool, "POOL_MIN", 1)
    for workers in (1, 2):  # inline, and in a pool
        parser = scanpool.Parser(workers)
        try:
            parser.want(good, path, (3, 11))
            assert isinstance(parser.get(good, path, (3, 11), lambda: FatalError("changed")), Facts)
            parser.want(stale, path, (3, 11))
            with pytest.raises(FatalError, match="changed"):
                parser.get(stale, path, (3, 11), lambda: FatalError("changed"))
        finally:
            parser.close()
