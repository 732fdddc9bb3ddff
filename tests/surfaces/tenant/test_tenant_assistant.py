"""Assistant: chat, streaming and the local tool loop, on a scripted backend."""

from __future__ import annotations

import json

import pytest
from bonsai_tenant import Assistant, ToolCall
from fake_backend import ScriptedBackend


def get_weather(city: str, days: int = 1) -> dict:
    """Weather forecast for a city."""
    return {"city": city, "sky": "clear", "days": days}


def test_chat_returns_the_whole_reply():
    reply = Assistant(model=ScriptedBackend()).chat("hello there")
    assert reply.text == "echo: hello there"
    assert reply.finish_reason == "stop"
    assert reply.tool_calls == ()
    assert reply.messages[-1] == {"role": "assistant", "content": "echo: hello there"}


def test_stream_yields_text_in_order_then_the_finish_reason():
    chunks = list(Assistant(model=ScriptedBackend(), max_tokens=2).stream("one two three"))
    assert [c.text for c in chunks[:-1]] == ["echo:", " one"]
    assert chunks[-1].finish_reason == "length"


def test_a_tool_call_runs_the_function_and_feeds_the_result_back():
    backend = ScriptedBackend()
    reply = Assistant(model=backend, tools=[get_weather]).chat("what is the weather?")
    assert reply.tool_calls == (ToolCall("call_0", "get_weather", json.dumps({"city": "Paris"})),)
    assert reply.text.startswith("The tool said: ")
    tool_message = reply.messages[2]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_0"
    assert json.loads(tool_message["content"]) == {"city": "Paris", "sky": "clear", "days": 1}
    # the second turn saw the tool result and the tool spec
    assert backend.calls[1]["messages"][-1]["role"] == "tool"
    assert backend.calls[0]["tools"][0]["function"]["name"] == "get_weather"


def test_a_failing_tool_becomes_an_error_text_for_the_model_not_an_exception():
    def get_weather(city: str) -> str:
        """Always broken."""
        raise OSError("sensor offline")

    reply = Assistant(model=ScriptedBackend(), tools=[get_weather]).chat("weather?")
    assert "error: get_weather failed: OSError: sensor offline" in reply.messages[2]["content"]


def test_tools_are_described_to_the_model_with_their_schema():
    backend = ScriptedBackend()
    Assistant(model=backend, tools=[get_weather]).chat("hi")
    assert backend.calls[0]["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather forecast for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                       "required": ["city"], "additionalProperties": False}}}]


def test_tool_call_with_bad_arguments_is_reported_to_the_model_by_name():
    for arguments, expected in [("{}", "'city'"), ('{"city": "x", "zip": 1}', "zip"),
                                ("[1]", "must be a JSON object"), ("{oops", "not valid JSON")]:
        reply = Assistant(model=_Calls(arguments), tools=[get_weather]).chat("go")
        result = reply.messages[2]["content"]
        assert result.startswith("error: ") and expected in result and "get_weather" in result, (arguments, result)
        assert reply.text == "done"


class _Calls:
    """Backend that calls get_weather once with fixed argument text, then says done."""

    def __init__(self, arguments: str) -> None:
        self.arguments = arguments

    def stream(self, messages, *, tools, max_tokens, temperature):
        from bonsai_tenant import Finish, TextDelta

        if messages[-1]["role"] == "tool":
            yield TextDelta("done")
            yield Finish("stop")
        else:
            yield ToolCall("call_1", "get_weather", self.arguments)
            yield Finish("tool_calls")


@pytest.mark.slow
def test_the_default_model_answers_through_the_public_api():
    assistant = Assistant(max_tokens=6)
    chunks = list(assistant.stream("What is the capital of France?"))
    assert "Paris" in "".join(c.text for c in chunks)
    assert chunks[-1].finish_reason in ("stop", "length")
