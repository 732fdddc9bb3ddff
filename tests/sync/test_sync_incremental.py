"""Issue 20: a sync after an edit writes only what changed (the rest are hard links to the copy
already in place) and re-parses only what changed, while the verifier still resolves every import
of the new tree and a failure still leaves the surface as it was."""

from __future__ import annotations

import dataclasses
import errno
import os

import bonsai_sync.plan.files
import bonsai_sync.verify.tree
import bonsai_sync.write.tree

FILES = {
    "src/app/main.py": "from . import a, b\n",
    "src/app/a.py": "from . import c\n",
    "src/app/b.py": "B = 1\n",
    "src/app/c.py": "C = 1\n",
}


def _inodes(repo) -> dict[str, int]:
    return {rel: os.stat(repo.root / "out/vendor" / rel).st_ino for rel in repo.listing("out/vendor")}


def test_a_sync_after_an_edit_writes_only_the_changed_file(make_repo):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    before = _inodes(repo)
    repo.write("src/app/b.py", "B = 2\n")
    result = repo.run("sync")
    assert (result.exit_code, result.stdout) == (0, "app: out/vendor: wrote 1, removed 0, unchanged 4\n")
    after = _inodes(repo)
    assert [rel for rel in before if after[rel] != before[rel]] == ["app/b.py", "bonsai-sync.lock"]
    assert repo.read("out/vendor/app/b.py") == "B = 2\n"
    assert repo.run("--rescan", "check").exit_code == 0


def test_where_hard_links_fail_every_file_is_copied(make_repo, monkeypatch):
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    before = _inodes(repo)
    tried = []

    def no_links(src, dst, **kwargs):
        tried.append(dst)
        raise OSError(errno.EPERM, "Operation not permitted", src)

    monkeypatch.setattr(bonsai_sync.write.tree.os, "link", no_links)
    repo.write("src/app/b.py", "B = 2\n")
    assert repo.run("sync").exit_code == 0
    assert len(tried) == 1  # the first refusal says this file system links nothing
    after = _inodes(repo)
    assert all(after[rel] != before[rel] for rel in before)
    assert repo.read("out/vendor/app/a.py") == "from . import c\n"
    assert repo.run("--rescan", "check").exit_code == 0


def _bad_plan_after_an_edit_is_refused(make_repo, monkeypatch) -> bool:
    """Edit b.py, and inject a planner bug that drops c.py, which only the unchanged a.py imports:
    True when the sync is refused naming a.py and the surface stays as it was."""
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    before = {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")}
    repo.write("src/app/b.py", "B = 2\n")
    real = bonsai_sync.plan.files.make_plan

    def wrong_plan(*args, **kwargs):
        plan = real(*args, **kwargs)
        return dataclasses.replace(plan, files=tuple(f for f in plan.files if f.rel != "app/c.py"))

    monkeypatch.setattr(bonsai_sync.plan.files, "make_plan", wrong_plan)
    result = repo.run("sync")
    if result.exit_code == 0:
        return False
    assert (result.exit_code, result.stderr) == (
        3, "out/vendor/app/a.py:1:1: imports 'app.c', which was not copied into the surface\n")
    assert {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")} == before
    assert repo.listing("out") == ["vendor/" + rel for rel in sorted(before)]
    return True


def test_the_verifier_resolves_the_imports_of_unchanged_files_in_the_new_tree(make_repo, monkeypatch):
    assert _bad_plan_after_an_edit_is_refused(make_repo, monkeypatch)


def test_a_verifier_that_checks_only_written_files_would_be_caught(make_repo, monkeypatch):
    real = bonsai_sync.verify.tree.walk_files
    written_only = lambda top: (p for p in real(top) if os.stat(p).st_nlink == 1)  # noqa: E731 (links are the kept files)
    monkeypatch.setattr(bonsai_sync.verify.tree, "walk_files", written_only)
    assert not _bad_plan_after_an_edit_is_refused(make_repo, monkeypatch)


def _synced_after_an_edit(make_repo, monkeypatch, counted: str):
    """Sync, count the calls of `bonsai_sync.verify.tree.<counted>` (by first argument), edit b.py, sync again."""
    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    calls: list = []
    real = getattr(bonsai_sync.verify.tree, counted)
    monkeypatch.setattr(bonsai_sync.verify.tree, counted, lambda first, *a: calls.append(first) or real(first, *a))
    repo.write("src/app/b.py", "B = 2\n")
    assert repo.run("sync").exit_code == 0
    return repo, calls


def test_the_verifier_parses_only_files_it_has_not_read_before(make_repo, monkeypatch):
    repo, read = _synced_after_an_edit(make_repo, monkeypatch, "read_file")
    assert read == [b"B = 2\n"]
    repo.write("src/app/b.py", "B = 3\n")
    assert repo.run("--no-cache", "sync").exit_code == 0  # no cache: every file is read again
    assert len(read) == 1 + 5


def _dry_run_after_an_edit_and_a_hand_edit(make_repo, monkeypatch) -> tuple[str, int]:
    """b.py changes upstream while a.py's copy is edited by hand: what `sync --dry-run` says, and
    how many times the lock had to be parsed to tell the two apart."""
    import bonsai_sync.write.lock

    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    repo.write("src/app/b.py", "B = 2\n")
    repo.write("out/vendor/app/a.py", "# edited by hand\n")
    parsed = []
    real = bonsai_sync.write.lock.load
    monkeypatch.setattr(bonsai_sync.write.lock, "load", lambda dest: parsed.append(dest) or real(dest))
    return repo.run("sync", "--dry-run").stdout, len(parsed)


DRY_RUN = ("out/vendor/app/a.py: would refuse (edited by hand in the surface (differs from bonsai-sync.lock))\n"
           "out/vendor/app/b.py: would write (changed upstream)\n"
           "app: out/vendor: would write 1, would remove 0, would refuse 1, unchanged 3\n")


def test_the_last_plan_tells_a_hand_edit_from_an_upstream_change_without_parsing_the_lock(make_repo, monkeypatch):
    assert _dry_run_after_an_edit_and_a_hand_edit(make_repo, monkeypatch) == (DRY_RUN, 0)


def test_reading_the_new_plan_as_the_lock_would_be_caught(make_repo, monkeypatch):
    from bonsai_sync.pipeline import Workspace

    monkeypatch.setattr(Workspace, "_locked_files", lambda self, surface, dest: self.plan(surface).by_rel())
    assert _dry_run_after_an_edit_and_a_hand_edit(make_repo, monkeypatch)[0] != DRY_RUN


def _failure_before_the_swap_leaves_the_surface(make_repo, monkeypatch) -> bool:
    """Edit two files and fail the sync once the new tree is staged (links and written files alike),
    just before the swap: True when the dest is exactly as it was (same bytes, same inodes, no link
    left to its files) and no temporary tree is left beside it."""
    import bonsai_sync.write.swap

    repo = make_repo(FILES)
    assert repo.run("sync").exit_code == 0
    before = {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")}
    inodes = _inodes(repo)
    repo.write("src/app/b.py", "B = 2\n")
    repo.write("src/app/c.py", "C = 2\n")
    staged = []

    def no_space(tree, dest):
        staged.append(sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()))
        raise OSError(errno.ENOSPC, "No space left on device", str(dest))

    monkeypatch.setattr(bonsai_sync.write.swap, "install", no_space)
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (2, "bonsai-sync: error: out/vendor: No space left on device; "
                                                    "the surface was left as it was\n")
    assert staged == [sorted(before)]  # the failure came after a complete tree was staged
    links = {rel: os.stat(repo.root / "out/vendor" / rel).st_nlink for rel in before}
    return (os.listdir(repo.root / "out") == ["vendor"] and _inodes(repo) == inodes and set(links.values()) == {1}
            and {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")} == before)


def test_a_failure_after_an_incremental_stage_leaves_the_surface_as_it_was(make_repo, monkeypatch):
    assert _failure_before_the_swap_leaves_the_surface(make_repo, monkeypatch)


def test_an_incremental_sync_that_writes_changed_files_in_place_would_be_caught(make_repo, monkeypatch):
    """The bug a faster sync invites: update the changed files in the dest itself, not in the new tree."""
    real = bonsai_sync.write.tree.stage

    def in_place(root, plan, lock_text, keep=frozenset()):
        for planned in plan.files:
            copy = root / plan.dest / planned.rel
            if planned.rel not in keep and copy.exists():
                copy.write_bytes((root / planned.source).read_bytes())
        return real(root, plan, lock_text, keep)

    monkeypatch.setattr(bonsai_sync.write.tree, "stage", in_place)
    assert not _failure_before_the_swap_leaves_the_surface(make_repo, monkeypatch)


def test_a_verifier_memo_blind_to_the_tree_listing_would_be_caught(make_repo, monkeypatch):
    """The memo keys each file's problems by what a finder sees; ignoring that would keep a.py's old
    answer after c.py, which it imports, left the tree."""
    monkeypatch.setattr(bonsai_sync.verify.tree, "_context", lambda tree, sources, rules: "same")
    assert not _bad_plan_after_an_edit_is_refused(make_repo, monkeypatch)


def test_after_an_edit_the_verifier_resolves_only_the_changed_file_until_a_file_comes_or_goes(make_repo, monkeypatch):
    repo, resolved = _synced_after_an_edit(make_repo, monkeypatch, "_check_file")
    assert len(resolved) == 1
    repo.write("src/app/b.py", "B = 3\nfrom . import d\n")
    repo.write("src/app/d.py", "D = 1\n")
    assert repo.run("sync").exit_code == 0
    assert len(resolved) == 1 + 6  # a new file: all six are resolved again in the new tree


def _after_two_edits(make_repo, monkeypatch, relock: bool) -> tuple[str, int]:
    """As above, but a `check` ran between (so the cached plan is not the one the lock was rendered
    from); with `relock`, the lock is then rewritten to record the hand-edited bytes of a.py as synced
    (the lock a checkout of another commit could bring): the files must come from these bytes."""
    import hashlib

    import bonsai_sync.write.lock

    repo = make_repo(FILES, name="relocked" if relock else "repo")
    assert repo.run("sync").exit_code == 0
    repo.write("src/app/b.py", "B = 3\n")
    assert repo.run("check").exit_code == 1
    repo.write("src/app/b.py", "B = 2\n")
    repo.write("out/vendor/app/a.py", "# edited by hand\n")
    if relock:
        lock = repo.read("out/vendor/bonsai-sync.lock")
        old = hashlib.sha256(b"from . import c\n").hexdigest()
        repo.write("out/vendor/bonsai-sync.lock", lock.replace(old, hashlib.sha256(b"# edited by hand\n").hexdigest()))
    parsed = []
    real = bonsai_sync.write.lock.load
    monkeypatch.setattr(bonsai_sync.write.lock, "load", lambda dest: parsed.append(dest) or real(dest))
    return repo.run("sync", "--dry-run").stdout, len(parsed)


def test_the_lock_read_last_time_is_not_parsed_again_and_another_lock_is(make_repo, monkeypatch):
    assert _after_two_edits(make_repo, monkeypatch, relock=False) == (DRY_RUN, 0)
    output, parsed = _after_two_edits(make_repo, monkeypatch, relock=True)
    assert parsed == 1
    assert "out/vendor/app/a.py: would write (changed upstream)" in output


def test_remembering_lock_files_without_their_bytes_would_be_caught(make_repo, monkeypatch):
    from bonsai_sync.pipeline import Workspace

    real = Workspace._locked_files

    def by_name(self, surface, dest):
        known = self.lock_store.get(surface.name)
        return known[1] if known is not None else real(self, surface, dest)

    monkeypatch.setattr(Workspace, "_locked_files", by_name)
    output = _after_two_edits(make_repo, monkeypatch, relock=True)[0]
    assert "out/vendor/app/a.py: would refuse (edited by hand" in output  # the lock it was given says otherwise
