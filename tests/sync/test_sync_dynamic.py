"""Every non-literal import site is answered by a hint or is an error (optional ones too), and the
from-import names check is switched off only by code that really writes names, never by a comment."""

from __future__ import annotations

import pytest

OPTIONAL = """try:
    __import__(name)
except ImportError:
    pass
"""


def _main(body: str) -> str:
    return f"def load(name):\n{''.join('    ' + line + chr(10) for line in body.splitlines())}"


def test_a_non_literal_import_inside_try_except_is_an_error_naming_the_surface(make_repo):
    repo = make_repo({"src/app/main.py": _main(OPTIONAL)})
    result = repo.run("sync")
    assert result.exit_code == 3
    assert result.stderr.startswith(
        "src/app/main.py:3:9: cannot follow __import__() of a non-literal name inside try/except ImportError; "
        "declare its targets in `hidden-imports` of surface 'app'")
    assert not (repo.root / "out").exists()
    assert repo.run("check").exit_code == 3 and repo.run("why", "app", "app.main").exit_code == 3


def test_an_empty_answer_for_the_site_says_it_needs_nothing_copied(make_repo):
    repo = make_repo({"src/app/main.py": _main(OPTIONAL)},
                     extra='hidden-imports = {"src/app/main.py:3" = []}\n')
    result = repo.run("sync")
    assert result.exit_code == 0, result.output
    assert repo.listing("out/vendor") == ["app/__init__.py", "app/main.py", "bonsai-sync.lock"]


def test_importlib_import_module_of_a_name_inside_try_except_is_reported_too(make_repo):
    repo = make_repo({"src/app/main.py": "import importlib\n" + _main(
        "try:\n    importlib.import_module(name)\nexcept ModuleNotFoundError:\n    pass\n")})
    result = repo.run("sync")
    assert result.exit_code == 3
    assert "src/app/main.py:4:9: cannot follow import_module() of a non-literal name inside try/except" in result.stderr


@pytest.mark.parametrize("provider", [
    "X = 1\n# do not use globals() here\n",
    "X = 1\nNOTE = 'sys.modules[__name__] is left alone, and vars() too'\n",
    "X = 1\ndef f(obj):\n    return vars(obj)\n",
])
def test_a_mention_of_globals_outside_code_does_not_switch_the_names_check_off(make_repo, provider):
    repo = make_repo({"src/app/main.py": "from app.m import Y\n", "src/app/m.py": provider})
    result = repo.run("sync")
    assert result.exit_code == 3, result.output
    assert "src/app/main.py:1:1: " in result.stderr and "'Y'" in result.stderr


@pytest.mark.parametrize("provider", [
    "X = 1\nglobals()['Y'] = 2\n",
    "import sys\nX = 1\nsys.modules[__name__].Y = 2\n",
    "from sys import modules as loaded\nX = 1\nsetattr(loaded[__name__], 'Y', 2)\n",
    "X = 1\ndef fill():\n    vars()['Y'] = 2\n",
])
def test_code_that_writes_names_by_hand_still_switches_the_names_check_off(make_repo, provider):
    repo = make_repo({"src/app/main.py": "from app.m import Y\n", "src/app/m.py": provider})
    result = repo.run("sync")
    assert result.exit_code == 0, result.output
