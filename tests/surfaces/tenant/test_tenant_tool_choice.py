"""Issue 21.5: tool_choice is enforced by constrained decoding; parallel_tool_calls; tool results answered."""

from __future__ import annotations

import json

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import ModelSpec, ServerConfig
from scripted_model import call_text, scripted_backend

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "The time in a zone",
                                         "parameters": {"type": "object", "properties": {"zone": {"type": "string"}},
                                                        "required": ["zone"]}}}
ASK = [{"role": "user", "content": "Weather in Paris and the time in Tokyo?"}]


def client_for(live_server, *replies: str):
    backend, model, _ = scripted_backend(*replies)
    app = create_app(ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}), lambda spec: backend)
    port = live_server(app).port
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-a", max_retries=0), model


def calls_of(reply) -> list[tuple[str, dict]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in reply.choices[0].message.tool_calls or []]


def test_required_forces_a_call_from_a_model_that_wants_to_chat(live_server):
    """The model's first wish is prose; its second, a call. "required" masks the prose away."""
    client, _ = client_for(live_server, "I think it is sunny.", call_text("get_weather", {"city": "Paris"}))
    reply = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, TIME], tool_choice="required")
    assert calls_of(reply) == [("get_weather", {"city": "Paris"})]
    assert reply.choices[0].finish_reason == "tool_calls"
    auto = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, TIME], tool_choice="auto")
    assert auto.choices[0].message.content == "I think it is sunny." and not auto.choices[0].message.tool_calls


def test_a_named_function_is_the_one_called(live_server):
    client, _ = client_for(live_server, "Sure.", call_text("get_weather", {"city": "Paris"}),
                           call_text("get_time", {"zone": "Asia/Tokyo"}))
    reply = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, TIME],
                                           tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert calls_of(reply) == [("get_time", {"zone": "Asia/Tokyo"})]


def test_auto_lets_the_model_choose_but_a_call_it_starts_is_always_valid(live_server):
    """The model starts a call with a wrong argument name; the mask keeps it to the schema."""
    broken = '<tool_call>\n{"name": "get_weather", "arguments": {"town": "Paris"}}\n</tool_call>'
    client, _ = client_for(live_server, broken, call_text("get_weather", {"city": "Paris"}))
    reply = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER], tool_choice="auto")
    assert calls_of(reply) == [("get_weather", {"city": "Paris"})]


def test_parallel_tool_calls_false_allows_one_call(live_server):
    both = call_text("get_weather", {"city": "Paris"}) + "\n" + call_text("get_time", {"zone": "Asia/Tokyo"})
    client, _ = client_for(live_server, both)
    several = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, TIME], tool_choice="required")
    assert [name for name, _ in calls_of(several)] == ["get_weather", "get_time"]
    one = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                                         parallel_tool_calls=False)
    assert [name for name, _ in calls_of(one)] == ["get_weather"]


def test_streaming_a_forced_call(live_server):
    client, _ = client_for(live_server, "No.", call_text("get_weather", {"city": "Paris"}))
    stream = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER], tool_choice="required",
                                            stream=True)
    chunks = list(stream)
    calls = [c for chunk in chunks for c in (chunk.choices[0].delta.tool_calls or [])]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_tool_result_gets_a_final_answer_not_the_echoed_markup(live_server):
    """SmolLM2 copies the result block; the reply is what it wrapped, as text."""
    client, model = client_for(live_server, "<tool_response>\n391\n</tool_response>")
    messages = [{"role": "user", "content": "What is 17 * 23?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_0", "type": "function",
                     "function": {"name": "calculator", "arguments": '{"expression": "17 * 23"}'}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "391"}]
    calculator = {"type": "function", "function": {"name": "calculator", "parameters": {
        "type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}
    reply = client.chat.completions.create(model="m", messages=messages, tools=[calculator])
    assert reply.choices[0].message.content == "391" and reply.choices[0].finish_reason == "stop"
    stream = client.chat.completions.create(model="m", messages=messages, tools=[calculator], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "391"


def test_tool_choice_none_offers_no_tools_and_no_constraint(live_server):
    client, model = client_for(live_server, "Plain words.")
    reply = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER], tool_choice="none")
    assert reply.choices[0].message.content == "Plain words."
    assert "# Tools" not in bytes(b for b in model.prompts[-1] if b < 256).decode()


def test_an_unknown_named_function_is_a_400(live_server):
    client, _ = client_for(live_server, "x")
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER],
                                       tool_choice={"type": "function", "function": {"name": "nope"}})
    assert "tool_choice: names 'nope', which is not in tools" in str(info.value)
