"""The built-in tools: calculator (no eval), clock (IANA zones), read_file (confined to a root)."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from bonsai.toolcall import ToolDefinitionError, ToolExecutionError, builtin_registry
from bonsai.toolcall.calculator import evaluate
from bonsai.toolcall.clock import make_clock
from bonsai.toolcall.files import make_file_lookup


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("17 * 23", 391),
        ("(1 + 2) * -3", -9),
        ("7 // 2", 3),
        ("7 % 4", 3),
        ("2 ** 10", 1024),
        ("1 / 4", 0.25),
        ("+5", 5),
        ("1.5e2", 150.0),
        (" 3 ", 3),
    ],
)
def test_calculator_arithmetic(expr, value):
    assert evaluate(expr) == value and type(evaluate(expr)) is type(value)


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ("__import__('os').system('true')", "unsupported syntax Call"),
        ("a + 1", "unsupported syntax Name"),
        ("(1).real", "unsupported syntax Attribute"),
        ("[1, 2]", "unsupported syntax List"),
        ("1 if 1 else 2", "unsupported syntax IfExp"),
        ("True + 1", "unsupported syntax Constant"),
        ("1j * 2", "unsupported syntax Constant"),
        ("'a' * 3", "unsupported syntax Constant"),
        ("2 ** 100000", "exponent 100000 is too large"),
        ("(2 ** 1000) ** 1000", "result too large"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("10.0 ** 400", "too large for a float"),
        ("(-8) ** 0.5", "not a real number"),
        ("1 +", "cannot parse"),
        ("1" * 600, "longer than 500"),
    ],
)
def test_calculator_refuses_everything_else(expr, problem):
    with pytest.raises(ToolExecutionError, match=problem.replace("(", r"\(").replace("*", r"\*")):
        evaluate(expr)


def test_calculator_tool_returns_text():
    assert (
        builtin_registry("calculator").run("call_0", "calculator", {"expression": "17*23"}).content == "391"
    )


def test_clock_in_time_zones():
    fixed = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    clock = make_clock(lambda: fixed)
    assert clock({}) == "2026-01-02T03:04:05+00:00 (UTC)"
    assert clock({"timezone": "Asia/Tokyo"}) == "2026-01-02T12:04:05+09:00 (Asia/Tokyo)"
    assert clock({"timezone": None}).endswith("(UTC)")
    with pytest.raises(ToolExecutionError, match="unknown time zone 'Mars/Base'"):
        clock({"timezone": "Mars/Base"})
    with pytest.raises(ToolExecutionError, match="unknown time zone"):
        clock({"timezone": "../../etc/passwd"})


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("hello")
    (root / "sub" / "b.txt").write_text("inner")
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink(tmp_path / "secret.txt", root / "leak.txt")
    os.symlink(tmp_path, root / "up")
    os.symlink(root / "a.txt", root / "alias.txt")
    return root


def test_read_file_inside_root(tree):
    read = make_file_lookup(tree)
    assert read({"path": "a.txt"}) == "hello"
    assert read({"path": "sub/b.txt"}) == "inner"
    assert read({"path": "alias.txt"}) == "hello"  # a symlink that stays inside is fine
    assert read({"path": "."}).splitlines() == ["a.txt", "alias.txt", "leak.txt", "sub/", "up/"]


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "sub/../../secret.txt",
        "sub/../a.txt",
        "/etc/passwd",
        "leak.txt",
        "up/secret.txt",
        "",
        "..\\secret.txt",
    ],
)
def test_read_file_refuses_escapes(tree, path):
    with pytest.raises(ToolExecutionError, match="refused"):
        make_file_lookup(tree)({"path": path})


def test_read_file_missing_and_truncated(tree):
    (tree / "big.txt").write_bytes(b"x" * (70 * 1024))
    read = make_file_lookup(tree)
    with pytest.raises(ToolExecutionError, match="no such file"):
        read({"path": "nope.txt"})
    assert read({"path": "big.txt"}).endswith("[truncated at 64 KiB]")


def test_builtin_registry_selection():
    assert builtin_registry("calculator, clock").names() == ["calculator", "clock"]
    with pytest.raises(ToolDefinitionError, match="needs a directory"):
        builtin_registry("read_file")
    with pytest.raises(ToolDefinitionError, match="unknown built-in tool 'web'"):
        builtin_registry("web")


def test_mutation_without_symlink_resolution_is_caught(tree, monkeypatch):
    """Inject a bug: join without resolving symlinks. The escape test's `leak.txt` case then reads
    the secret outside the root, so that test would fail."""
    import bonsai.toolcall.files as files

    def unresolved(root, relative):
        if ".." in relative or relative.startswith("/"):
            raise ToolExecutionError("refused")
        return root / relative

    monkeypatch.setattr(files, "resolve_inside", unresolved)
    assert make_file_lookup(tree)({"path": "leak.txt"}) == "top secret"
