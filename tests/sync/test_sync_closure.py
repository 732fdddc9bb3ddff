"""The closure rules, pinned on the `closure` scenario by its exact sorted file listing."""

from __future__ import annotations

import tomllib

from bonsai_sync import __version__

APP = [
    "app/__init__.py",
    "app/assets/a.txt",  # Path(__file__).parent / "assets": a directory brings every file below it
    "app/assets/b/c.txt",
    "app/config.json",  # Path(__file__).with_name("config.json")
    "app/deep/__init__.py",  # ancestors of app.deep.inner.leaf
    "app/deep/inner/__init__.py",
    "app/deep/inner/leaf.py",  # import a.b.c.d
    "app/deep/sibling.py",  # `from ..sibling import` in an ancestor __init__
    "app/dyn_a.py",  # importlib.import_module("app.dyn_a")
    "app/dyn_b.py",  # import_module(".dyn_b", __package__) through an alias
    "app/dyn_c.py",  # import_module(".dyn_c", package="app")
    "app/dyn_d/__init__.py",  # __import__("app.dyn_d", fromlist=["e"])
    "app/dyn_d/e.py",
    "app/dyn_f.py",  # il = importlib; il.import_module(...)
    "app/helpers.py",  # from . import helpers (a submodule)
    "app/kernels/__init__.py",  # resources.files("app.kernels") imports the package
    "app/kernels/add.wgsl",  # files(...) / "add.wgsl"
    "app/kernels/sub/mul.wgsl",  # files(...).joinpath("sub", "mul.wgsl")
    "app/lazy.py",  # imported inside a function
    "app/main.py",
    "app/notes.txt",  # os.path.join(os.path.dirname(__file__), "notes.txt")
    "app/ns/part.py",  # namespace package: no __init__.py invented
    "app/optional_present.py",  # try/except ImportError: copied because it resolves
    "app/plat_posix.py",  # both branches of `if sys.platform == ...`
    "app/plat_win.py",
    "app/runtime_else.py",  # the else: of `if TYPE_CHECKING:`
    "app/shadow/__init__.py",  # the package directory wins over shadow.py
    "app/star/__init__.py",
    "app/star/one.py",  # from .star import * with __all__ = ["one", "two"]
    "app/star/two.py",
    "app/static/site.css",  # data glob
    "app/templates/page.html",  # Path(__file__).parent / "templates" / "page.html"
    "app/util.py",  # imported by the package __init__
    "bonsai-sync.lock",
    "shared/__init__.py",  # a first-party package in the second source root
    "shared/more.py",
    "shared/tools.py",
]
LEAF = [
    "app/__init__.py",
    "app/deep/__init__.py",
    "app/deep/inner/__init__.py",
    "app/deep/inner/leaf.py",
    "app/deep/sibling.py",
    "app/helpers.py",  # `from ... import helpers`, three levels up
    "app/util.py",
    "bonsai-sync.lock",
]


def test_sync_copies_exactly_the_closure(scenario):
    repo = scenario("closure")
    result = repo.run("sync")
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"app: out/vendor: wrote {len(APP) - 1}, removed 0, unchanged 0\n"
        f"leaf: out/leaf: wrote {len(LEAF) - 1}, removed 0, unchanged 0\n"
    )
    assert repo.listing("out/vendor") == APP
    assert repo.listing("out/leaf") == LEAF


def test_copies_are_byte_identical_and_locked(scenario):
    repo = scenario("closure")
    assert repo.run("sync", "--surface", "leaf").exit_code == 0
    lock = tomllib.loads(repo.read("out/leaf/bonsai-sync.lock"))
    assert lock["version"] == __version__ and lock["surface"] == "leaf"
    assert [e["path"] for e in lock["file"]] == LEAF[:-1]
    for entry in lock["file"]:
        assert repo.read(f"out/leaf/{entry['path']}") == repo.read(entry["source"])
        assert entry["source"] == f"src/{entry['path']}"
    assert not (repo.root / "out/vendor").exists()  # --surface limits the run


def test_second_sync_is_unchanged_and_a_file_it_did_not_write_goes_only_when_told(scenario):
    repo = scenario("closure")
    repo.run("sync", "--surface", "leaf")
    repo.write("out/leaf/app/old_module.py", "")
    assert repo.run("sync", "--surface", "leaf").exit_code == 1
    assert (repo.root / "out/leaf/app/old_module.py").is_file()
    result = repo.run("sync", "--surface", "leaf", "--delete-foreign")
    assert result.output == ("out/leaf/app/old_module.py: deleted (not written by bonsai-sync)\n"
                             f"leaf: out/leaf: wrote 0, removed 0, delete 1 not written by bonsai-sync, "
                             f"unchanged {len(LEAF) - 1}\n")
    assert repo.listing("out/leaf") == LEAF
    assert repo.run("sync", "--surface", "leaf").output == f"leaf: out/leaf: wrote 0, removed 0, unchanged {len(LEAF) - 1}\n"


def test_dry_run_writes_nothing(scenario):
    repo = scenario("closure")
    result = repo.run("sync", "--dry-run", "--surface", "leaf")
    assert result.output == "".join(f"out/leaf/{rel}: would write (missing)\n" for rel in LEAF[:-1]) + (
        f"leaf: out/leaf: would write {len(LEAF) - 1}, would remove 0, unchanged 0\n"
    )
    assert not (repo.root / "out").exists()


def test_why_names_every_hop_with_its_site(scenario):
    repo = scenario("closure")
    result = repo.run("why", "app", "app.deep.sibling")
    assert result.exit_code == 0
    assert result.output == (
        "app.main  (entry)\n"
        "  -> app.deep.inner.leaf  (src/app/main.py:16:1, import)\n"
        "  -> app.deep.inner  (implied, parent package)\n"
        "  -> app.deep.sibling  (src/app/deep/inner/__init__.py:3:1, from)\n"
    )
    by_file = repo.run("why", "app", "src/app/kernels/sub/mul.wgsl")
    assert by_file.output == "app.main  (entry)\n  -> app/kernels/sub/mul.wgsl  (src/app/main.py:59:11, resource)\n"


def test_why_for_a_module_outside_the_closure_is_a_usage_error(scenario):
    result = scenario("closure").run("why", "app", "app.unused")
    assert result.exit_code == 2
    assert result.output == (
        "bonsai-sync: error: app.unused: not in this surface's closure (give a module name, a source file, or a file of "
        "the copy)\n"
    )


def test_graph_json_and_dot(scenario):
    repo = scenario("closure")
    import json

    body = json.loads(repo.run("graph", "leaf").output)
    assert sorted(n["id"] for n in body["nodes"]) == [
        "app",
        "app.deep",
        "app.deep.inner",
        "app.deep.inner.leaf",
        "app.deep.sibling",
        "app.helpers",
        "app.util",
    ]
    assert {"from": "app.deep.inner.leaf", "to": "app.helpers", "kind": "from", "file": "src/app/deep/inner/leaf.py", "line": 3, "col": 1} in body["edges"]
    dot = repo.run("graph", "leaf", "--format", "dot").output
    assert dot.startswith("digraph closure {\n") and '  "app.deep.inner.leaf" -> "app.helpers";\n' in dot


def test_real_subprocess_sync_then_check(scenario):
    repo = scenario("closure")
    synced = repo.run_process("sync")
    assert synced.returncode == 0, synced.stderr
    assert repo.listing("out/vendor") == APP
    checked = repo.run_process("check")
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "app: out/vendor: fresh\nleaf: out/leaf: fresh\n", "")
