"""Session: streamed text, `<tool_call>` blocks run built-in tools, results go back to the model."""

from __future__ import annotations

import json

from bonsai_os.session import Session, system_prompt

from bonsai.tools import ToolRegistry, builtin_registry


class ScriptedModel:
    """Replies with fixed texts in order, split into 3-character pieces (so tags split across chunks)."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict]] = []

    def complete(self, messages, on_text, max_tokens):
        self.seen.append([dict(m) for m in messages])
        reply = self.replies.pop(0)
        for i in range(0, len(reply), 3):
            on_text(reply[i : i + 3])
        return "stop"


def test_plain_reply_streams_and_is_kept_in_history():
    pieces: list[str] = []
    session = Session(ScriptedModel("Paris is the capital."), ToolRegistry())
    assert session.ask("capital of France?", on_text=pieces.append) == "Paris is the capital."
    assert "".join(pieces) == "Paris is the capital."
    assert [m["role"] for m in session.messages] == ["system", "user", "assistant"]


def test_a_tool_call_runs_the_tool_and_the_model_sees_its_result():
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>'
    model = ScriptedModel(call, "It is 42.")
    uses = []
    reply = Session(model, builtin_registry("calculator")).ask("6 times 7?", on_tool=uses.append)
    assert reply == "It is 42."
    assert [(u.name, u.arguments, u.result, u.ok) for u in uses] == [
        ("calculator", {"expression": "6*7"}, "42", True)]
    second_turn = model.seen[1]
    assert second_turn[-2] == {"role": "assistant", "content": call}
    assert second_turn[-1] == {"role": "tool", "content": "42"}


def test_a_malformed_call_goes_back_as_an_error_instead_of_crashing():
    model = ScriptedModel("<tool_call>{not json</tool_call>", "Sorry.")
    uses = []
    assert Session(model, builtin_registry("calculator")).ask("?", on_tool=uses.append) == "Sorry."
    assert not uses[0].ok and "not valid JSON" in uses[0].result
    assert model.seen[1][-1]["content"].startswith("error: ")


def test_tool_rounds_are_bounded():
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
    model = ScriptedModel(*[call] * 10)
    Session(model, builtin_registry("calculator"), max_tool_rounds=2).ask("loop")
    assert len(model.seen) == 3


def test_the_system_prompt_lists_each_tool_spec():
    registry = builtin_registry("calculator,clock")
    prompt = system_prompt(registry)
    for spec in registry.specs():
        assert json.dumps(spec, ensure_ascii=False) in prompt
    assert "<tools>" not in system_prompt(ToolRegistry())
