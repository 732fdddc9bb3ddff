"""Issue 18.1: `from X import name` must find `name` as a submodule of X or a name X binds at run time."""

from __future__ import annotations

import textwrap

PROVIDER = textwrap.dedent('''
    from typing import TYPE_CHECKING
    import os.path
    import json as js
    from .sub import one as uno
    from .star_all import *
    from .star_public import *
    def fn(): pass
    class Cls: pass
    a, (b, *c) = 1, (2, 3)
    ann: int = 1
    bare: int
    try:
        tried = 1
    except Exception:
        pass
    for looped in range(1):
        pass
    def setter():
        global made_global
        made_global = 1
    if TYPE_CHECKING:
        typed_only = 1
''')


def _repo(make_repo, main: str):
    return make_repo({
        "src/app/main.py": main,
        "src/app/pkg/__init__.py": PROVIDER,
        "src/app/pkg/sub.py": "one = 1\n",
        "src/app/pkg/star_all.py": "__all__ = ['exported']\nexported = 1\nhidden = 2\n",
        "src/app/pkg/star_public.py": "from .deeper import *\n_private = 1\n",
        "src/app/pkg/deeper.py": "chained = 1\n",
        "src/app/mod.py": "name = 1\n",
        "src/app/lazy.py": "def __getattr__(name):\n    return name\n",
        "src/app/dyn.py": "globals()['made'] = 1\n",
    })


def test_every_binding_form_resolves(make_repo):
    repo = _repo(make_repo, (
        "from .pkg import sub, fn, Cls, a, b, c, ann, tried, looped, made_global, os, js, uno, exported, chained\n"
        "from .pkg import __doc__\n"
        "from .lazy import anything\n"  # a module-level __getattr__ may provide it
        "from .dyn import made\n"  # globals() writes: the scan cannot list the names
        "from .mod import name\n"
        "try:\n    from .mod import optional_missing\nexcept ImportError:\n    pass\n"
    ))
    result = repo.run("sync")
    assert (result.exit_code, result.stderr) == (0, "")


def test_a_typo_in_an_imported_name_is_an_error_at_its_site(make_repo):
    repo = _repo(make_repo, "from .pkg import sbu\nfrom .mod import nme\n")
    result = repo.run("sync")
    assert result.exit_code == 3
    assert result.stderr == (
        "src/app/main.py:1:1: cannot import name 'sbu' from 'app.pkg' (src/app/pkg/__init__.py): neither a "
        "submodule nor a name it binds at run time (names bound only under `if TYPE_CHECKING:` do not count); "
        "did you mean 'sub'?\n"
        "src/app/main.py:2:1: cannot import name 'nme' from 'app.mod' (src/app/mod.py): neither a submodule nor a "
        "name it binds at run time (names bound only under `if TYPE_CHECKING:` do not count); did you mean 'name'?\n"
    )
    assert not (repo.root / "out").exists()


def test_names_that_do_not_exist_at_run_time_are_errors(make_repo):
    repo = _repo(make_repo, (
        "from .pkg import typed_only\n"  # bound only under TYPE_CHECKING
        "from .pkg import bare\n"  # `bare: int` binds nothing
        "from .pkg import hidden\n"  # star_all's __all__ does not export it
        "from .pkg import _private\n"  # a star import without __all__ skips private names
        "def later():\n    from .mod import missing_in_function\n"
    ))
    result = repo.run("sync")
    assert result.exit_code == 3
    assert [line.split(": cannot import name ")[1].split(" from ")[0] for line in result.stderr.splitlines()] == [
        "'typed_only'", "'bare'", "'hidden'", "'_private'", "'missing_in_function'",
    ]
    assert result.stderr.splitlines()[-1].startswith("src/app/main.py:6:5: ")
