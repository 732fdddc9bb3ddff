"""The scanner is pure: text in, facts out, with line, column and kind."""

from __future__ import annotations

from bonsai_sync.scan import scan, scan_libcst
from bonsai_sync.scan.facts import ImportFact, ResourceFact

SOURCE = '''"""import not_in_docstring"""
import os, importlib as il
from importlib import import_module as im, resources
from pathlib import Path
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import typ
else:
    import notyp
try:
    import opt
except (ImportError, OSError):
    pass
x = "import not_in_string"
__all__ = ["a"]
__all__ += ["b"]
def f():
    from .. import up
    im(".y", __package__)
    il.import_module("z.w")
    __import__("q.r", fromlist=["s"])
    d = resources.files("pkg.sub") / "k.wgsl"
    e = Path(__file__).resolve().parent.parent / "data" / "x.txt"
'''


def test_imports_with_position_and_kind():
    facts = scan(SOURCE)
    assert facts.imports == (
        ImportFact("os", (), 0, 2, 1, "import"),
        ImportFact("importlib", (), 0, 2, 1, "import"),
        ImportFact("importlib", ("import_module", "resources"), 0, 3, 1, "from"),
        ImportFact("pathlib", ("Path",), 0, 4, 1, "from"),
        ImportFact("typing", ("TYPE_CHECKING",), 0, 5, 1, "from"),
        ImportFact("typ", (), 0, 7, 5, "import", type_checking=True),
        ImportFact("notyp", (), 0, 9, 5, "import"),
        ImportFact("opt", (), 0, 11, 5, "import", optional=True),
        ImportFact("", ("up",), 2, 18, 5, "from", in_function=True),
        ImportFact("y", (), 1, 19, 5, "import_module", in_function=True),
        ImportFact("z.w", (), 0, 20, 5, "import_module", in_function=True),
        ImportFact("q.r", ("s",), 0, 21, 5, "__import__", in_function=True),
    )
    assert facts.all_names == ("a", "b")


def test_resources_are_literal_paths_from_their_anchor():
    facts = scan(SOURCE)
    assert facts.resources == (
        ResourceFact("pkg.sub", ("k.wgsl",), 22, 9),
        ResourceFact(None, ("..", "data", "x.txt"), 23, 9),
    )
    assert facts.problems == ()


def test_non_literal_imports_and_paths_are_problems_never_guesses():
    facts = scan(
        "import importlib\nfrom importlib.resources import files\n"
        "def f(n, m):\n    importlib.import_module(f'a.{n}')\n    files('a') / n\n    exec(m)\n"
    )
    assert facts.imports == (ImportFact("importlib", (), 0, 1, 1, "import"), ImportFact("importlib.resources", ("files",), 0, 2, 1, "from"))
    assert [(p.kind, p.line, p.col) for p in facts.problems] == [("resource", 5, 5)]
    assert [(d.line, d.col, d.prefix) for d in facts.dynamic] == [(4, 5, "a.")]  # exec() runs code, imports nothing


def test_names_in_strings_are_not_imports_and_unaliased_calls_are_ignored():
    facts = scan('"""importlib.import_module("a")"""\nimport_module("b")\nfiles("c") / "d"\n')
    assert facts.imports == () and facts.resources == () and facts.problems == ()


def test_syntax_error_is_a_fact_not_an_exception():
    (problem,) = scan("def f(:\n").problems
    assert (problem.kind, problem.line, problem.col) == ("syntax", 1, 7)
    assert problem.message.startswith("syntax error: ")


def _position_mismatches(files) -> list[str]:
    """Import sites where the scanner's line:col differs from CPython's own `ast`."""
    import ast

    wrong = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        want = {(n.lineno, n.col_offset + 1) for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)}
        got = {(f.line, f.col) for f in scan_libcst(text).imports if f.kind in ("import", "from")}
        wrong += [f"{path}:{line}:{col}" for line, col in sorted(want ^ got)]
    return wrong


def _stdlib_sample():
    import email
    import json
    from pathlib import Path

    return sorted(Path(email.__file__).parent.glob("*.py")) + sorted(Path(json.__file__).parent.glob("*.py"))


def test_import_positions_match_cpython_ast_on_the_stdlib():
    files = _stdlib_sample()
    assert len(files) > 20
    assert _position_mismatches(files) == []


def test_position_check_catches_an_off_by_one_locator(monkeypatch):
    import bonsai_sync.scan.positions as positions

    real = positions.locate

    def shifted(module, nodes):
        return {key: (line, col + 1) for key, (line, col) in real(module, nodes).items()}

    monkeypatch.setattr(positions, "locate", shifted)
    assert _position_mismatches(_stdlib_sample()[:5]) != []
