"""bonsai-os command line: --help/--version, and bad input as one error line with exit code 2."""

from __future__ import annotations

import pytest
from bonsai_os import __version__
from bonsai_os.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"bonsai-os {__version__}"


def test_help_names_the_tools_and_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "calculator, clock, read_file" in out and "Exit codes" in out


@pytest.mark.parametrize("argv, message", [
    (["--model", "/nonexistent.gguf", "hi"], "/nonexistent.gguf: no such model file"),
    (["--max-tokens", "0", "hi"], "--max-tokens must be at least 1, got 0"),
    (["--max-steps", "0", "hi"], "--max-steps must be at least 1, got 0"),
    (["--tools", "teleport", "hi"], "unknown built-in tool 'teleport'"),
    (["--temperature", "nan", "hi"], "--temperature must be a finite number >= 0, got nan"),
    (["--temperature", "-1", "hi"], "--temperature must be a finite number >= 0, got -1.0"),
    (["--root", "/nonexistent_dir", "hi"], "--root /nonexistent_dir: no such directory"),
    (["--max-positions", "64", "hi"], "--max-positions must be more than --max-tokens (128), got 64"),
    (["  "], "the prompt is empty"),
    (["--tool-choice", "required", "--unconstrained", "hi"], "--tool-choice required needs tools"),
    (["--tool-choice", "required", "--tools", "", "hi"], "--tool-choice required needs tools"),
])
def test_bad_input_is_one_error_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("bonsai-os: error: ") and message in err and "Traceback" not in err


def test_without_a_prompt_it_answers_each_stdin_line_until_exit(monkeypatch, capsys):
    import io

    from bonsai_os.cli import parser, run
    from test_os_session import CALL, model

    loaded, _ = model("answer one", CALL, "It is 42.")
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n\n6*7?\nexit\nnever asked\n"))
    assert run(parser().parse_args(["--unconstrained"]), model=loaded) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["answer one", "It is 42."]
    assert err.strip() == '[calculator({"expression": "6*7"}) -> 42]'


def test_a_python_that_cannot_load_the_bundles_compiled_modules_is_named_before_anything_else(
        monkeypatch, tmp_path, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "_cffi_backend" else real(name, *a))
    (tmp_path / "_cffi_backend.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["hi"]) == 2
    err = capsys.readouterr().err
    assert "this bundle was built for Python 3.11 and this is Python" in err and "run it with python3.11" in err
