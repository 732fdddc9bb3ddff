"""Issue 18.4: no error for what is not a dependency at run time: other Pythons' branches, a
directory of `__file__`, exec(), and a local function that happens to be called import_module."""

from __future__ import annotations

VERSIONS = """import sys
PY311 = sys.version_info >= (3, 11)
if sys.version_info >= (3, 14):
    import annotationlib
if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup
else:
    BaseExceptionGroup = BaseExceptionGroup
if sys.version_info[:2] >= (3, 13) and sys.platform != "win32":
    import _interpreters
if not PY311:
    import tomli as tomllib
else:
    import tomllib
if sys.version_info.minor < 11:
    from . import old
"""


def test_branches_for_other_pythons_are_skipped(make_repo):
    repo = make_repo({"src/app/main.py": VERSIONS, "src/app/old.py": ""}, 'python = "3.11"\n')
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/main.py", "bonsai-sync.lock"]


def test_the_target_python_decides_which_branch_is_live(make_repo):
    repo = make_repo({"src/app/main.py": VERSIONS, "src/app/old.py": ""}, 'python = "3.10"\n')
    result = repo.run("sync")
    assert result.exit_code == 3
    assert [line.split(": ", 1)[0] for line in result.stderr.splitlines()] == [
        "src/app/main.py:6:5", "src/app/main.py:12:5"]  # exceptiongroup and tomli, not declared third-party
    repo.edit_config('python = "3.10"', 'python = "3.10"\nthird-party = ["exceptiongroup", "tomli"]')
    assert repo.run("sync").exit_code == 0
    assert "app/old.py" in repo.listing("out/vendor")


def test_a_directory_of_the_file_and_exec_are_not_dependencies(make_repo):
    repo = make_repo({"src/app/main.py": (
        "import os\nfrom pathlib import Path\n"
        "HERE = Path(__file__).parent\nUP = Path(__file__).resolve().parent.parent\n"
        "DIR = os.path.dirname(__file__)\nTOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "def run(code):\n    exec(code)\n"
    ), "src/app/unrelated.txt": "not a resource\n", "src/other.txt": "not a resource either\n"})
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/main.py", "bonsai-sync.lock"]


def test_a_local_import_module_is_not_importlibs(make_repo):
    repo = make_repo({
        "src/app/main.py": ("from importlib import import_module\n\n"
                            "def import_module(name, minimum=None):\n    return None\n\n"
                            "numpy = import_module('numpy')\n"),
        "src/app/ext.py": "def import_module(name):\n    return None\n",
        "src/app/user.py": "from app.ext import import_module\nsympy_like = import_module('numpy')\n",
    })
    repo.edit_config('entry = ["app.main"]', 'entry = ["app.main", "app.user"]')
    result = repo.run("sync")  # the scanner and the post-copy verifier agree: no numpy import
    assert (result.exit_code, result.stderr) == (0, "")
