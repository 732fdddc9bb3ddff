"""Issue 18.9: sync never overwrites (or removes) a file edited by hand in the surface unless
--force, and --dry-run lists every file it would write, remove or refuse (a dest that is a
regular file: test_sync_os_errors.py)."""

from __future__ import annotations

EDITED = "edited by hand in the surface (differs from bonsai-sync.lock)"


def test_sync_refuses_a_hand_edit_and_writes_nothing(synced_leaf):
    repo = synced_leaf
    repo.write("out/leaf/app/util.py", "# patched by hand\n")
    repo.write("src/app/helpers.py", '"""Changed upstream."""\n')
    result = repo.run("sync", "--surface", "leaf")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"bonsai-sync: error: out/leaf/app/util.py: {EDITED}; not overwritten\n"
        "bonsai-sync: error: move each change into the source (the only copy edited by hand), or run "
        "`bonsai-sync sync --force` to discard it\n")
    assert repo.read("out/leaf/app/util.py") == "# patched by hand\n"
    assert repo.read("out/leaf/app/helpers.py") == '"""Module helpers."""\n'  # all or nothing
    forced = repo.run("sync", "--surface", "leaf", "--force")
    assert (forced.exit_code, forced.stdout) == (0, "leaf: out/leaf: wrote 2, removed 0, unchanged 5\n")
    assert repo.read("out/leaf/app/util.py") == repo.read("src/app/util.py")


def test_a_hand_edited_file_the_closure_no_longer_needs_is_not_removed(synced_leaf):
    repo = synced_leaf
    repo.write("out/leaf/app/helpers.py", "# patched by hand\n")
    repo.write("src/app/deep/inner/leaf.py", '"""Leaf without imports."""\n')
    result = repo.run("sync", "--surface", "leaf")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"bonsai-sync: error: out/leaf/app/helpers.py: {EDITED}; not overwritten"
    assert repo.read("out/leaf/app/helpers.py") == "# patched by hand\n"


def test_dry_run_lists_every_file_it_would_write_remove_or_refuse(synced_leaf):
    repo = synced_leaf
    repo.write("out/leaf/app/util.py", "# patched by hand\n")
    repo.write("out/leaf/app/stray.py", "")
    repo.write("src/app/helpers.py", '"""Changed upstream."""\n')
    before = repo.listing("out/leaf")
    result = repo.run("sync", "--surface", "leaf", "--dry-run")
    assert (result.exit_code, result.stdout) == (1, (
        "out/leaf/app/helpers.py: would write (changed upstream)\n"
        "out/leaf/app/stray.py: would refuse (not written by bonsai-sync (not in bonsai-sync.lock))\n"
        f"out/leaf/app/util.py: would refuse ({EDITED})\n"
        "leaf: out/leaf: would write 1, would remove 0, would refuse 2, unchanged 5\n"))
    assert result.stderr == repo.run("sync", "--surface", "leaf").stderr  # the very refusal of the real sync
    assert repo.listing("out/leaf") == before


def test_build_without_a_bundle_kind_touches_no_hand_edit(synced_leaf):
    repo = synced_leaf
    repo.write("out/leaf/app/util.py", "# patched by hand\n")
    result = repo.run("build")
    assert result.exit_code == 2
    assert "no bundle kind for surface(s) app, leaf" in result.stderr
    assert repo.read("out/leaf/app/util.py") == "# patched by hand\n"

