"""RuntimeBackend over a fake engine (no GPU): prompt rendering, streamed tool calls, limits, cancel."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from bonsai_tenant.errors import InvalidRequest
from bonsai_tenant.events import Finish, TextDelta, ToolCall
from bonsai_tenant.runtime_backend import RuntimeBackend

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}


class FakeTokenizer:
    """One token per character (ids are code points)."""

    def encode(self, text, allow_special=True):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)

    def token_id(self, text):
        raise KeyError(text)


@dataclass
class FakeEngine:
    """Streams `reply` one character per token through on_token, like Engine.generate."""

    reply: str
    max_positions: int = 4096
    tokenizer: FakeTokenizer = field(default_factory=FakeTokenizer)
    prompts: list = field(default_factory=list)
    steps: int = 0

    @property
    def cfg(self):
        return type("Cfg", (), {"eos_id": 0})()

    def reset(self):
        pass

    def generate(self, ids, max_tokens, sampling, *, stop_ids, decode, on_token):
        self.prompts.append(decode(ids))
        out = self.reply[:max_tokens]
        for ch in out:
            self.steps += 1
            on_token(ord(ch), ch)
        return type("Gen", (), {"stop_reason": "length" if len(out) < len(self.reply) else "eos",
                                "tokens": list(out)})()


class EchoTemplate:
    """A chat template that does not handle tools itself (like SmolLM2's): the prompt is the messages as JSON."""

    template = "{% for message in messages %}...{% endfor %}"

    def render(self, messages, tools=None, add_generation_prompt=True):
        return json.dumps(messages)


def backend(reply: str, **kw) -> tuple[RuntimeBackend, FakeEngine]:
    engine = FakeEngine(reply, **kw)
    return RuntimeBackend(engine, EchoTemplate()), engine


def test_text_and_a_tool_call_split_across_tokens_come_out_as_events():
    reply = 'Let me check. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    b, engine = backend(reply)
    events = list(b.stream([{"role": "user", "content": "weather?"}], tools=[WEATHER], max_tokens=200,
                           temperature=0.0))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Let me check. "
    assert [e for e in events if isinstance(e, ToolCall)] == [ToolCall("call_0", "get_weather", '{"city": "Paris"}')]
    assert events[-1] == Finish("stop", len(engine.tokenizer.encode(engine.prompts[0])), len(reply))


def test_max_tokens_is_a_length_finish():
    b, _ = backend("a long answer")
    events = list(b.stream([{"role": "user", "content": "x"}], tools=[], max_tokens=4, temperature=0.0))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "a lo"
    assert events[-1].reason == "length"


def test_a_call_to_an_undeclared_tool_stays_text():
    reply = '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>'
    b, _ = backend(reply)
    events = list(b.stream([{"role": "user", "content": "x"}], tools=[WEATHER], max_tokens=200, temperature=0.0))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == reply


def test_unsupported_tool_schema_and_too_long_prompts_are_invalid_requests_before_generating():
    b, engine = backend("hi", max_positions=64)
    bad = {"type": "function", "function": {"name": "bad name!", "parameters": {"type": "object"}}}
    with pytest.raises(InvalidRequest, match="tools: tool 'bad name!'"):
        b.stream([{"role": "user", "content": "x"}], tools=[bad], max_tokens=8, temperature=0.0)
    with pytest.raises(InvalidRequest, match=r"exceeds the model's 64 positions"):
        b.stream([{"role": "user", "content": "x" * 80}], tools=[], max_tokens=8, temperature=0.0)
    assert engine.prompts == []


def test_closing_the_stream_early_stops_the_generation():
    class EndlessEngine(FakeEngine):
        def generate(self, ids, max_tokens, sampling, *, stop_ids, decode, on_token):
            for _ in range(max_tokens):
                self.steps += 1
                on_token(120, "x")
            return type("Gen", (), {"stop_reason": "length", "tokens": []})()

    engine = EndlessEngine("", max_positions=2 * 10**9)
    b = RuntimeBackend(engine, EchoTemplate())
    stream = b.stream([{"role": "user", "content": "x"}], tools=[], max_tokens=10**9, temperature=0.0)
    assert next(stream) == TextDelta("x")
    stream.close()
    assert b.lock.acquire(timeout=10), "the generation thread did not stop"
    assert engine.steps < 10**9


def test_the_prompt_is_the_runtimes_hermes_rendering_of_tools_calls_and_results():
    b, engine = backend("ok")
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
    ]
    list(b.stream(messages, tools=[WEATHER], max_tokens=4, temperature=0.0))
    system, user, assistant, tool_turn = json.loads(engine.prompts[0])
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
