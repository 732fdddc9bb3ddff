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
    (["--tools", "teleport", "hi"], "unknown built-in tool 'teleport'"),
])
def test_bad_input_is_one_error_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("bonsai-os: error: ") and message in err and "Traceback" not in err


def test_without_a_prompt_it_answers_each_stdin_line_until_exit(monkeypatch, capsys):
    import io

    from bonsai_os.cli import parser, run

    class Model:
        def complete(self, messages, tools, on_text, max_tokens):
            question = messages[-1]["content"]
            if question == "time?" and messages[-1]["role"] == "user":
                on_text('<tool_call>{"name": "calculator", "arguments": {"expression": "2+2"}}</tool_call>')
            else:
                on_text(f"answer to {question}")
            return "stop"

    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n\ntime?\nexit\nnever asked\n"))
    assert run(parser().parse_args([]), model=Model()) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["answer to hello", "answer to 4"]
    assert err.strip() == '[calculator({"expression": "2+2"}) -> 4]'
