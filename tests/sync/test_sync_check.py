"""`check` writes nothing, exits 0 when fresh and 1 when stale, and says why each file is stale."""

from __future__ import annotations

import json


def test_fresh_surface_exits_0(synced_leaf):
    repo = synced_leaf
    result = repo.run("check", "--surface", "leaf")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "leaf: out/leaf: fresh\n", "")


def test_each_kind_of_staleness_is_named(synced_leaf):
    repo = synced_leaf
    repo.write("src/app/helpers.py", '"""Changed upstream."""\n')
    repo.write("out/leaf/app/util.py", "# edited in the surface\n")
    (repo.root / "out/leaf/app/deep/sibling.py").unlink()
    repo.write("out/leaf/app/stray.py", "")
    before = repo.listing("out/leaf")
    result = repo.run("check", "--surface", "leaf")
    assert result.exit_code == 1
    assert result.stdout == (
        "out/leaf/app/deep/sibling.py: missing\n"
        "out/leaf/app/helpers.py: changed upstream\n"
        "out/leaf/app/stray.py: not written by bonsai-sync (not in bonsai-sync.lock)\n"
        "out/leaf/app/util.py: edited by hand in the surface (differs from bonsai-sync.lock)\n"
    )
    assert result.stderr == "leaf: out/leaf: stale (4 file(s)); run `bonsai-sync sync`\n"
    assert repo.listing("out/leaf") == before  # check writes nothing


def test_check_json_and_diff(synced_leaf):
    repo = synced_leaf
    repo.write("src/app/helpers.py", '"""Changed upstream."""\n')
    body = json.loads(repo.run("check", "--format", "json").stdout)
    assert body["fresh"] is False
    assert body["surfaces"]["leaf"]["stale"] == [{"path": "out/leaf/app/helpers.py", "reason": "changed upstream"}]
    assert body["surfaces"]["app"]["stale"][0]["reason"] == "missing"  # app was never synced
    diff = repo.run("check", "--surface", "leaf", "--diff").stdout
    assert diff == (
        "out/leaf/app/helpers.py: changed upstream\n"
        "--- a/out/leaf/app/helpers.py\n"
        "+++ b/out/leaf/app/helpers.py\n"
        "@@ -1 +1 @@\n"
        '-"""Module helpers."""\n'
        '+"""Changed upstream."""\n'
    )


def test_a_removed_import_makes_the_copy_extra_and_sync_removes_it(synced_leaf):
    repo = synced_leaf
    repo.write("src/app/deep/inner/leaf.py", '"""Leaf without imports."""\n')
    assert repo.run("check", "--surface", "leaf").stdout == (
        "out/leaf/app/deep/inner/leaf.py: changed upstream\n"
        "out/leaf/app/helpers.py: extra (not needed by the closure)\n"
    )
    assert repo.run("sync", "--surface", "leaf").stdout == "leaf: out/leaf: wrote 1, removed 1, unchanged 5\n"
    assert "app/helpers.py" not in repo.listing("out/leaf")
    assert repo.run("check", "--surface", "leaf").exit_code == 0


def test_a_tampered_lock_is_stale(synced_leaf):
    repo = synced_leaf
    repo.write("out/leaf/bonsai-sync.lock", repo.read("out/leaf/bonsai-sync.lock").replace("0.1.0", "0.0.9"))
    result = repo.run("check", "--surface", "leaf")
    assert (result.exit_code, result.stdout) == (1, "out/leaf/bonsai-sync.lock: bonsai-sync.lock is out of date\n")


def test_check_from_a_real_subprocess_exits_1(synced_leaf):
    repo = synced_leaf
    repo.write("src/app/helpers.py", '"""Changed upstream."""\n')
    proc = repo.run_process("check", "--surface", "leaf")
    assert (proc.returncode, proc.stdout) == (1, "out/leaf/app/helpers.py: changed upstream\n")


def test_check_surface_interface_for_other_tools(synced_leaf):
    from bonsai_sync.config import load
    from bonsai_sync.pipeline import check_surface

    repo = synced_leaf
    config = load(repo.root)
    assert check_surface(config, "leaf") == []
    repo.write("out/leaf/app/util.py", "# edited\n")
    assert check_surface(config, "leaf") == [
        "out/leaf/app/util.py: edited by hand in the surface (differs from bonsai-sync.lock)"
    ]
