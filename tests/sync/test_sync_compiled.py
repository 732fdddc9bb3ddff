"""Issue 18.2: compiled extension modules are found as CPython finds them, copied with their
platform tag in the lock, and `compiled = "forbid"` keeps them out of a surface."""

from __future__ import annotations

import importlib.machinery
import tomllib

EXT = importlib.machinery.EXTENSION_SUFFIXES[0]  # ".cpython-311-x86_64-linux-gnu.so" here
TAG = EXT.strip(".").rpartition(".")[0]
BINARY = b"\x7fELF not really a library, never loaded by these tests\x00"


def _repo(make_repo, main: str, extra: str = ""):
    return make_repo({
        "src/app/main.py": main,
        f"src/app/_speed{EXT}": BINARY,
        "src/app/_speed.py": "# CPython prefers the extension module in the same folder\n",
        "src/app/_speed.pyi": "def fast() -> int: ...\n",
        "src/app/_native.py": "def fast():\n    return 1\n",
    }, extra)


def test_a_compiled_module_is_copied_with_its_platform_tag(make_repo):
    repo = _repo(make_repo, "from . import _speed\n")
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == ["app/__init__.py", f"app/_speed{EXT}", "app/_speed.pyi", "app/main.py",
                                          "bonsai-sync.lock"]
    assert (repo.root / f"out/vendor/app/_speed{EXT}").read_bytes() == BINARY
    lock = tomllib.loads(repo.read("out/vendor/bonsai-sync.lock"))
    entry = next(e for e in lock["file"] if e["path"] == f"app/_speed{EXT}")
    assert (entry["kind"], entry["platform"], entry["source"]) == ("compiled", TAG, f"src/app/_speed{EXT}")
    assert repo.run("check").exit_code == 0
    assert repo.run("why", "app", "app._speed").stdout.splitlines()[-1].startswith("app._speed: a compiled extension module")


def test_forbid_makes_a_required_compiled_import_an_error_at_its_site(make_repo):
    repo = _repo(make_repo, "import os\nfrom . import _speed\n", 'compiled = "forbid"\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (
        3, f"src/app/main.py:2:1: imports 'app._speed', a compiled module (src/app/_speed{EXT}), and "
           '[tool.bonsai-sync.surfaces.app] has compiled = "forbid"\n')
    assert not (repo.root / "out").exists()


def test_forbid_leaves_out_an_optional_compiled_module(make_repo):
    repo = _repo(make_repo, "try:\n    from ._speed import fast\nexcept ImportError:\n    from ._native import fast\n",
                 'compiled = "forbid"\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/_native.py", "app/main.py", "bonsai-sync.lock"]
    why = repo.run("why", "app", "app._speed").stdout
    assert why == ("app.main  (entry)\n  -> app._speed  (src/app/main.py:2:5, from, optional)\n"
                   'app._speed: a compiled module, left out: this surface has compiled = "forbid"\n')


def test_the_verifier_refuses_a_compiled_file_in_a_forbidding_surface(tmp_path):
    from bonsai_sync.verify.tree import Rules, verify_tree

    (tmp_path / "app").mkdir()
    (tmp_path / "app/__init__.py").write_text("")
    (tmp_path / f"app/_speed{EXT}").write_bytes(BINARY)
    assert verify_tree(tmp_path, "out", Rules({"app"}, frozenset()), []) == []
    found = verify_tree(tmp_path, "out", Rules({"app"}, frozenset(), forbid_compiled=True), [])
    assert [str(d) for d in found] == [f'out/app/_speed{EXT}:1:1: a compiled module, and this surface has compiled = "forbid"']
