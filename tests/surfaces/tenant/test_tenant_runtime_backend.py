"""RuntimeBackend on scripted model parts (no GPU): prompt, streamed tool calls, constraint, limits, cancel."""

from __future__ import annotations

import json
import re

import pytest
from bonsai_tenant._vendor.bonsai.toolcall.prompt import ToolPrompt
from bonsai_tenant.decode import Cancelled
from bonsai_tenant.errors import InvalidRequest
from bonsai_tenant.events import Finish, TextDelta, ToolCall
from bonsai_tenant.runtime_backend import ModelParts, RuntimeBackend
from scripted_model import ByteTokenizer

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}


class CharTokenizer(ByteTokenizer):
    """One token per byte (ids are byte values), plus the ChatML specials; here the texts are ASCII."""


def render(messages, tools=None, add_generation_prompt=True):
    """A template that does not handle tools itself (like SmolLM2's): the prompt is the messages as JSON."""
    return json.dumps(messages)


class Scripted:
    """`generate` for ModelParts: each generation plays `reply` one character per token."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []
        self.processors: list = []
        self.resets = 0
        self.steps = 0

    def generate(self, prompt_ids, settings, processor, on_token, cancelled):
        self.prompts.append(bytes(prompt_ids).decode())
        self.processors.append(processor)
        out = []
        for ch in self.reply[:settings.max_tokens]:
            if cancelled():
                raise Cancelled
            self.steps += 1
            on_token(ord(ch), None)
            out.append(ord(ch))
        return out

    def reset(self):
        self.resets += 1


def backend(reply: str, max_positions: int = 4096, **kw) -> tuple[RuntimeBackend, Scripted]:
    script = Scripted(reply)
    parts = ModelParts(script.generate, CharTokenizer(), ToolPrompt(render, ""), max_positions, script.reset)
    return RuntimeBackend(parts, **kw), script


def test_text_and_a_tool_call_split_across_tokens_come_out_as_events():
    reply = 'Let me check. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    b, script = backend(reply, constrained=False)
    events = list(b.stream([{"role": "user", "content": "weather?"}], tools=[WEATHER], max_tokens=200,
                           temperature=0.0))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Let me check. "
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert (call.name, call.arguments) == ("get_weather", '{"city": "Paris"}') and re.fullmatch(r"call_[0-9a-f]{24}", call.id)
    assert events[-1] == Finish("stop", len(script.prompts[0]), len(reply))
    assert script.resets == 1


def test_max_tokens_is_a_length_finish():
    b, _ = backend("a long answer")
    events = list(b.stream([{"role": "user", "content": "x"}], tools=[], max_tokens=4, temperature=0.0))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "a lo"
    assert events[-1].reason == "length"


def test_a_call_to_an_undeclared_tool_stays_text():
    reply = '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>'
    b, _ = backend(reply, constrained=False)
    events = list(b.stream([{"role": "user", "content": "x"}], tools=[WEATHER], max_tokens=200, temperature=0.0))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == reply


def test_tool_calls_are_constrained_only_when_tools_are_declared():
    b, script = backend("ok")
    list(b.stream([{"role": "user", "content": "x"}], tools=[WEATHER], max_tokens=8, temperature=0.0))
    list(b.stream([{"role": "user", "content": "x"}], tools=[], max_tokens=8, temperature=0.0))
    assert hasattr(script.processors[0], "apply") and script.processors[1] is None


def test_unsupported_tool_schema_and_too_long_prompts_are_invalid_requests_before_generating():
    b, script = backend("hi", max_positions=64)
    bad = {"type": "function", "function": {"name": "bad name!", "parameters": {"type": "object"}}}
    with pytest.raises(InvalidRequest, match="tools: tool 'bad name!'"):
        b.stream([{"role": "user", "content": "x"}], tools=[bad], max_tokens=8, temperature=0.0)
    with pytest.raises(InvalidRequest, match=r"longer than the 56 positions"):
        b.stream([{"role": "user", "content": "x" * 80}], tools=[], max_tokens=8, temperature=0.0)
    assert script.prompts == []


def test_closing_the_stream_early_stops_the_generation():
    b, script = backend("x" * 100_000, max_positions=10**9)
    stream = b.stream([{"role": "user", "content": "x"}], tools=[], max_tokens=100_000, temperature=0.0)
    assert next(stream) == TextDelta("x")
    stream.cancel()
    assert b.lock.acquire(timeout=10), "the generation thread did not stop"
    assert script.steps < 100_000


def test_the_prompt_is_the_runtimes_hermes_rendering_of_tools_calls_and_results():
    b, script = backend("ok")
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
    ]
    list(b.stream(messages, tools=[WEATHER], max_tokens=4, temperature=0.0))
    system, user, assistant, tool_turn = json.loads(script.prompts[0])
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\n# Tools")
    assert json.dumps(WEATHER) in system["content"]
    assert assistant == {"role": "assistant",
                         "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'}
    assert tool_turn == {"role": "user", "content": "<tool_response>\nsunny\n</tool_response>"}


def test_tool_call_arguments_that_are_not_json_are_an_invalid_request():
    b, _ = backend("ok")
    messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{oops"}}]}]
    with pytest.raises(InvalidRequest, match="messages: cannot render them"):
        b.stream(messages, tools=[WEATHER], max_tokens=4, temperature=0.0)
