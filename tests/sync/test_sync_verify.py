"""The verifier re-scans the written tree on its own and catches a wrong plan (exit 3)."""

from __future__ import annotations

import dataclasses
import sys

import bonsai_sync.plan
from bonsai_sync.verify_import import import_entries


def _drop(rel: str, monkeypatch) -> None:
    """Inject a planner bug: the plan silently loses `rel`."""
    real = bonsai_sync.plan.make_plan

    def wrong_plan(*args, **kwargs):
        plan = real(*args, **kwargs)
        return dataclasses.replace(plan, files=tuple(f for f in plan.files if f.rel != rel))

    monkeypatch.setattr(bonsai_sync.plan, "make_plan", wrong_plan)


def test_verifier_catches_a_plan_that_drops_a_module(scenario, monkeypatch):
    repo = scenario("verify")
    _drop("app/helper.py", monkeypatch)
    result = repo.run("--no-cache", "sync")
    assert (result.exit_code, result.stdout, result.stderr) == (
        3,
        "",
        "out/vendor/app/main.py:3:1: imports 'app.helper', which was not copied into the surface\n",
    )
    assert not (repo.root / "out").exists()  # the broken tree never replaced the surface


def test_verifier_catches_a_dropped_ancestor_package(scenario, monkeypatch):
    repo = scenario("closure")
    _drop("app/deep/__init__.py", monkeypatch)
    result = repo.run("--no-cache", "sync", "--surface", "leaf")
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == (
        "out/leaf/app/deep/inner/__init__.py:3:1: imports 'app.deep.sibling', but package 'app.deep' has no "
        "__init__.py in the copy"
    )


def test_a_failed_sync_leaves_the_surface_untouched(scenario, monkeypatch):
    repo = scenario("verify")
    assert repo.run("sync").exit_code == 0
    before = {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")}
    repo.write("src/app/main.py", '"""Now imports a second helper."""\n\nfrom . import helper, other\n')
    repo.write("src/app/other.py", '"""Other."""\n')
    _drop("app/other.py", monkeypatch)
    result = repo.run("--no-cache", "sync")
    assert (result.exit_code, result.stderr) == (
        3,
        "out/vendor/app/main.py:3:1: imports 'app.other', which was not copied into the surface\n",
    )
    assert {rel: repo.read(f"out/vendor/{rel}") for rel in repo.listing("out/vendor")} == before
    assert repo.listing("out") == ["vendor/" + rel for rel in sorted(before)]  # no temp dirs left


def test_verify_import_passes_on_a_correct_copy(scenario):
    repo = scenario("verify")
    result = repo.run("sync", "--verify-import")
    assert (result.exit_code, result.stdout) == (0, "app: out/vendor: wrote 3, removed 0, unchanged 0\n")


def test_verify_import_reports_a_module_missing_from_the_copy(tmp_path):
    tree = tmp_path / "vendor"
    (tree / "app").mkdir(parents=True)
    (tree / "app/__init__.py").write_text("")
    (tree / "app/main.py").write_text("import importlib\nimportlib.import_module('app' + '.gone')\n")
    failures, warnings = import_entries(tree, "out/vendor", ("app.main",), (), {"app"})
    assert warnings == []
    assert failures == [
        "out/vendor: importing 'app.main' failed: ModuleNotFoundError: No module named 'app.gone'"
    ]


def test_verify_import_reports_an_undeclared_third_party(tmp_path):
    tree = tmp_path / "vendor"
    tree.mkdir()
    (tree / "entry.py").write_text("import click\n")
    assert import_entries(tree, "v", ("entry",), ("click",), set()) == ([], [])
    failures, _ = import_entries(tree, "v", ("entry",), (), set())
    assert failures == ["v: importing 'entry' failed: ModuleNotFoundError: No module named 'click'"]
    assert "click" in sys.modules  # the check ran in a subprocess, not here


def _tree(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_verify_tree_applies_its_own_rules(tmp_path):
    from bonsai_sync.verify import Rules, verify_tree

    source = _tree(tmp_path / "src", {"app/__init__.py": "", "app/gone.py": "", "app/main.py": ""})
    tree = _tree(
        tmp_path / "out",
        {
            "app/__init__.py": "",
            "app/main.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    import app.gone\n"  # not a runtime import
                "try:\n    import app.gone\nexcept ImportError:\n    pass\n"  # optional
                "import requests\n"  # line 8: not allowed
                "import click\n"  # allowed
                "def f():\n    from . import gone\n"  # line 11: a module the copy lacks
                "    from . import __doc__\n"  # an attribute, fine
                "import importlib\nimportlib.import_module('app.gone')\n"  # line 14
            ),
        },
    )
    found = [str(d) for d in verify_tree(tree, "out", Rules({"app"}, frozenset({"click"})), [source])]
    assert found == [
        "out/app/main.py:8:1: imports 'requests', a third-party name not allowed for this surface",
        "out/app/main.py:11:5: imports 'app.gone', which was not copied into the surface",
        "out/app/main.py:14:1: imports 'app.gone', which was not copied into the surface",
    ]


def _nest(repo) -> None:
    """Make the scenario's dest a folder inside a package (`out/pkg/_vendor`), as surfaces vendor the runtime."""
    repo.edit_config('dest = "out/vendor"', 'dest = "out/pkg/_vendor"')
    repo.write("out/pkg/__init__.py", '"""The surface\'s own package."""\n')


def test_a_copy_inside_a_package_may_import_itself_relatively(scenario):
    repo = scenario("verify")
    _nest(repo)
    result = repo.run("--no-cache", "sync")
    assert (result.exit_code, result.stdout) == (0, "app: out/pkg/_vendor: wrote 3, removed 0, unchanged 0\n")


def test_a_copy_inside_a_package_must_not_import_itself_absolutely(scenario):
    """Inside `pkg._vendor` an absolute `import app...` would load another copy (or none) at run time."""
    repo = scenario("verify")
    _nest(repo)
    repo.write("src/app/main.py", '"""Absolute self-imports."""\n\nimport app.helper\nfrom app import helper\n'
                                  'import importlib\nimportlib.import_module("app.helper")\n')
    result = repo.run("--no-cache", "sync")
    hint = ("absolutely, but this copy lives inside package 'pkg._vendor' (as 'pkg._vendor.app'); import it "
            "relatively (from . import ...) or set `rewrite-imports = true` for the surface, or it finds another "
            "copy, or none, at run time")
    assert (result.exit_code, result.stderr) == (3, "".join(
        f"out/pkg/_vendor/app/main.py:{line}:1: imports {name!r} {hint}\n"
        for line, name in ((3, "app.helper"), (4, "app"), (6, "app.helper"))))
    assert not (repo.root / "out" / "pkg" / "_vendor").exists()  # nothing half-written


def test_absolute_self_imports_are_fine_when_the_dest_is_a_sys_path_root(scenario):
    repo = scenario("verify")
    repo.write("src/app/main.py", '"""Absolute self-import."""\n\nfrom app import helper\n')
    assert repo.run("--no-cache", "sync").exit_code == 0
