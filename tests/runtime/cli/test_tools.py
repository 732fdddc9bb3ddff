"""`bonsai tools list/parse/call` through click's CliRunner (the chat command needs the GPU engine)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from bonsai.cli import main
from bonsai.toolcall.parser import parse_text
from tests.runtime.toolcall.recorded_outputs import HERE, REGISTRY, SAMPLES, as_json


def test_list_prints_one_spec_per_tool():
    out = CliRunner().invoke(main, ["tools", "list", "--tools", "calculator,clock"])
    assert out.exit_code == 0
    assert [json.loads(line)["function"]["name"] for line in out.output.splitlines()] == [
        "calculator",
        "clock",
    ]


def test_parse_prints_the_events_of_a_recorded_response():
    out = CliRunner().invoke(main, ["tools", "parse", str(HERE / "parallel_calls.txt")])
    assert out.exit_code == 0
    lines = [json.loads(line) for line in out.output.splitlines()]
    assert lines == as_json(parse_text(SAMPLES["parallel_calls"], REGISTRY))


def test_call_runs_a_builtin_and_reports_errors_with_exit_1(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(main, ["tools", "call", "calculator", '{"expression": "17 * 23"}'])
    assert (ok.exit_code, ok.output) == (0, "391\n")
    bad = runner.invoke(main, ["tools", "call", "calculator", '{"expression": "1/0"}'])
    assert (bad.exit_code, bad.output) == (1, "error: division by zero\n")
    (tmp_path / "a.txt").write_text("hi")
    read = runner.invoke(main, ["tools", "call", "read_file", '{"path": "a.txt"}', "--root", str(tmp_path)])
    assert (read.exit_code, read.output) == (0, "hi\n")


def test_bad_input_is_a_one_line_error_not_a_traceback():
    runner = CliRunner()
    out = runner.invoke(main, ["tools", "call", "calculator", "{nope"])
    assert out.exit_code == 2 and out.output.startswith("bonsai: error: ARGUMENTS is not valid JSON")
    out = runner.invoke(main, ["tools", "list", "--tools", "web"])
    assert out.exit_code == 2 and "unknown built-in tool 'web'" in out.output
    out = runner.invoke(main, ["tools", "call", "read_file", '{"path": "x"}'])
    assert out.exit_code == 2 and "needs a directory" in out.output


def test_bonsai_chat_gets_a_tools_option_that_routes_to_the_tool_loop(monkeypatch):
    import bonsai.cli.tools as tools_cli

    seen = {}
    monkeypatch.setattr(
        tools_cli, "interactive_tool_chat", lambda registry, **o: seen.update(o, tools=registry.names())
    )
    out = CliRunner().invoke(
        main, ["chat", "--tools", "calculator,clock", "--system", "Be brief.", "--tool-choice", "required"]
    )
    assert out.exit_code == 0, out.output
    assert (
        seen["tools"] == ["calculator", "clock"]
        and seen["system"] == "Be brief."
        and seen["tool_choice"] == "required"
    )
    bad = CliRunner().invoke(main, ["chat", "--tools", "web"])
    assert bad.exit_code == 2 and "unknown built-in tool 'web'" in bad.output


def test_tools_chat_offers_every_kv_mode_as_bonsai_run_does():
    """`bonsai tools chat --kv` takes the same modes as `bonsai run` (q4res included: the panel's default)."""
    from bonsai.kv import AUTO, MODE_NAMES

    def kv_choices(command):
        return tuple(next(p for p in command.params if p.name == "kv").type.choices)

    chat = main.commands["tools"].commands["chat"]
    assert kv_choices(chat) == kv_choices(main.commands["run"]) == (AUTO, *MODE_NAMES) and "q4res" in MODE_NAMES
    bad = CliRunner().invoke(main, ["tools", "chat", "hi", "--kv", "q9"])
    assert bad.exit_code == 2 and "'q9' is not one of" in bad.output, bad.output
