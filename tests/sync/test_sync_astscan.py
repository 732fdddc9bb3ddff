"""The `ast` scanner gives exactly libcst's facts wherever it answers: on real trees (this repo's runtime,
networkx, sympy + mpmath when installed; BONSAI_SYNC_ASTSCAN_ALL=1 takes every file, else a sample) and
on tricky snippets; and the comparison catches a scanner that reads one fact differently (mutations)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bonsai_sync.scan import astscan, scan, scan_libcst
from bonsai_sync.scan.decode import decode
from bonsai_sync.scan.facts import Facts

REPO = Path(__file__).resolve().parents[2]
TARGETS = ((3, 8), (3, 11), (3, 13))
SNIPPETS = [
    "import os, sys as system\nfrom . import a\nfrom ..b.c import d as e, f\nfrom x import *\n",
    "x = 1; import y\nif True: import z\n\timport_ = 2\n",
    "s = 'é'; import café\nt = '😀' ; from ü import (v,\n  w)\n",  # columns count code points
    "import a\r\nif x:\r\n    import b\r\n",
    "import sys\nif sys.version_info >= (3, 10):\n    import new\nelif sys.version_info[:2] < (3, 9):\n"
    "    import old\nelse:\n    import mid\nPY312 = sys.version_info >= (3, 12)\nif not PY312:\n    import pre\n"
    "if sys.version_info.minor == 11 and sys.version_info[0] == 3 or x:\n    import m\n"
    "if sys.version_info > (3, 11, 2):\n    import micro\nif sys.version_info[:2] == (3, 11):\n    import eq\n",
    "from typing import TYPE_CHECKING\nimport typing as t\nif TYPE_CHECKING:\n    import a\n    x = 1\nelse:\n"
    "    import b\nif t.TYPE_CHECKING:\n    import c\nif (TYPE_CHECKING, 1):\n    import d\n",
    "try:\n    import a\nexcept (ImportError, OSError):\n    import b\nelse:\n    import c\nfinally:\n    import d\n"
    "try:\n    import e\nexcept builtins.ModuleNotFoundError as exc:\n    pass\ntry:\n    import f\nexcept ValueError:\n"
    "    pass\ntry:\n    import g\nexcept {1: ImportError}:\n    pass\n",
    "__all__ = ['a', 'b']\n__all__ += ('c',)\n__all__ = __all__ + ['d']\nclass K:\n    __all__ = ['k']\n",
    "__all__ = {'a': 'b'}\n__all__ += [*'cd']\n",
    "def f():\n    import inner\n    global g\n    g = 1\nasync def h():\n    async with x as (p, [q, *r]):\n"
    "        import w\n    async for i in ('a', 'b'):\n        import v\nclass C:\n    import cls\n    y = 2\n",
    "for name in ('a', 'b'):\n    import n\nelse:\n    import m\nwhile x:\n    import w\nelse:\n    import e\n"
    "with open(p) as fh, q:\n    import o\nmatch x:\n    case 1:\n        import c1\n    case _:\n        import c2\n",
    "if a:\n    import one\nelse:\n    if b:\n        import two\nx: int\ny: int = 3\nz += 1\n(p, q), *r = 1, 2, 3\n",
    "import os.path\nos = 1\np = os.path\nimport importlib as il\nm = il\nif x:\n    from __future__ import y\n",
    "def __getattr__(name):\n    return name\n",
    "globals()['x'] = 1\n",
    "import importlib\nmod = importlib.import_module('x')\n",  # hinted: libcst's
    "x = (\n" + "[" * 120 + "]" * 120 + ")\nimport deep\n",  # too deep for the ast path: libcst's
    "def f(:\n",  # a syntax error: libcst's path reports CPython's
]


def _trees() -> list[Path]:
    found = [REPO / "runtime"]
    for package in ("networkx", "sympy", "mpmath"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            found.append(Path(spec.origin).parent)
    return found


def _files() -> list[Path]:
    """Every .py file of the trees, or a deterministic sample: all of runtime/, every 12th file of the others."""
    everything = os.environ.get("BONSAI_SYNC_ASTSCAN_ALL") == "1"
    chosen = []
    for tree in _trees():
        files = sorted(p for p in tree.rglob("*.py") if "__pycache__" not in p.parts)
        chosen += files if everything or tree.name == "runtime" else files[::12]
    return chosen


_LIBCST: dict[tuple[str, tuple[int, int]], Facts] = {}  # libcst's facts, parsed once for all tests


def mismatches(texts: list[tuple[str, str]]) -> tuple[list[str], int]:
    """(names whose ast facts differ from libcst's, how many the ast scanner answered); targets rotate."""
    differ, answered = [], 0
    for i, (name, text) in enumerate(texts):
        target = TARGETS[i % len(TARGETS)]
        facts = astscan.scan_ast(text, target)
        if facts is None:
            continue
        answered += 1
        if (name, target) not in _LIBCST:
            _LIBCST[name, target] = scan_libcst(text, target)
        if facts != _LIBCST[name, target]:
            differ.append(f"{name} (Python {target[0]}.{target[1]})")
    return differ, answered


def _corpus() -> list[tuple[str, str]]:
    texts = [(f"snippet {i}", s) for i, s in enumerate(SNIPPETS)]
    for path in _files():
        text, problem = decode(path.read_bytes())
        if problem is None:
            texts.append((str(path), text))
    return texts


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, str]]:
    return _corpus()


def test_ast_facts_equal_libcst_facts_on_real_trees_and_snippets(corpus):
    differ, answered = mismatches(corpus)
    assert differ == []
    # the ast path is the common one: every file without a hint, not too deep, answers
    unhinted = [t for _, t in corpus if not any(h in t for h in astscan._HINTS)]
    assert answered >= 0.9 * len(unhinted) > 0


def test_scan_takes_the_ast_path_only_where_it_answers():
    for i, text in enumerate(SNIPPETS):
        target = TARGETS[i % len(TARGETS)]
        assert scan(text, target) == scan_libcst(text, target)
    assert astscan.scan_ast(SNIPPETS[-3], (3, 11)) is None  # a hint: import_module
    assert astscan.scan_ast(SNIPPETS[-2], (3, 11)) is None  # deeper than MAX_DEPTH
    assert astscan.scan_ast(SNIPPETS[-1], (3, 11)) is None  # a syntax error
    assert astscan.scan_ast(SNIPPETS[0], (3, 11)) is not None


def _byte_columns(self, node):
    return node.col_offset + 1


def _undecided(self, test):
    return None


def _no_conditional(self, stmt, ctx):
    self.block(stmt.body, ctx)
    self.block(stmt.orelse, ctx)


@pytest.mark.parametrize(("attribute", "bug"), [("col", _byte_columns), ("decide", _undecided),
                                                ("if_", _no_conditional)])
def test_the_comparison_catches_a_scanner_that_reads_one_fact_differently(corpus, monkeypatch, attribute, bug):
    monkeypatch.setattr(astscan._Walker, attribute, bug)
    differ, _ = mismatches(corpus)
    assert differ


def _check_imports_libcst(repo) -> str:
    """`check`'s exit code and whether it imported libcst, from a fresh interpreter."""
    probe = ("import sys\nfrom click.testing import CliRunner\nfrom bonsai_sync.cli import main\n"
             f"r = CliRunner().invoke(main, ['--root', {str(repo.root)!r}, 'check'])\n"
             "print(r.exit_code, 'libcst' in sys.modules)\n")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60).stdout


def test_an_edit_to_a_file_without_hints_is_checked_without_importing_libcst(make_repo):
    repo = make_repo({"src/app/main.py": "from . import a, b\n", "src/app/a.py": "A = 1\n",
                      "src/app/b.py": "import importlib\nB = importlib.import_module('app.a')\n"})
    assert repo.run("sync").exit_code == 0
    repo.write("src/app/a.py", "A = 2\nimport json\n")
    assert _check_imports_libcst(repo) == "1 False\n"
    repo.write("src/app/b.py", "import importlib\nB = importlib.import_module('json')\n")
    assert _check_imports_libcst(repo) == "1 True\n"  # a hinted file still goes to libcst (the probe sees it)
