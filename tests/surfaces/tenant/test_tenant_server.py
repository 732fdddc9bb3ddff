"""The OpenAI-compatible server over real HTTP (uvicorn in a thread), on a scripted backend."""

from __future__ import annotations

import json

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import ModelSpec, ServerConfig
from fake_backend import make_backend
from http_client import request, sse_events

KEYS = {"acme": "sk-acme-1", "globex": "sk-globex-2"}
MODELS = {"smollm2": ModelSpec("smollm2"), "acme/private": ModelSpec("acme/private", tenants=frozenset({"acme"}))}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}}}}}


@pytest.fixture
def port(live_server):
    return live_server(create_app(ServerConfig.from_keys(KEYS, MODELS), make_backend)).port


def chat(port, body, key="sk-acme-1"):
    return request(port, "POST", "/v1/chat/completions", body, key=key)


def test_a_completion_in_the_openai_format(port):
    status, headers, raw = chat(port, {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and headers["content-type"] == "application/json"
    body = json.loads(raw)
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "echo: hi"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}


def test_streaming_sends_role_then_deltas_then_finish_then_done(port):
    status, headers, raw = chat(port, {"model": "smollm2", "stream": True, "stream_options": {"include_usage": True},
                                       "messages": [{"role": "user", "content": "a b"}]})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "echo: a b"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 3


def test_tool_calls_come_back_in_the_openai_format(port):
    body = {"model": "smollm2", "tools": [WEATHER], "messages": [{"role": "user", "content": "weather in Paris?"}]}
    status, _, raw = chat(port, body)
    message = json.loads(raw)["choices"][0]
    assert status == 200 and message["finish_reason"] == "tool_calls"
    assert message["message"]["tool_calls"] == [{"id": "call_0", "type": "function", "function": {
        "name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]
    _, _, raw = chat(port, {**body, "stream": True})
    chunks = [e for e in sse_events(raw) if e != "[DONE]"]
    calls = [c["choices"][0]["delta"]["tool_calls"] for c in chunks if "tool_calls" in c["choices"][0]["delta"]]
    assert calls == [[{"index": 0, "id": "call_0", "type": "function",
                       "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_tool_choice_none_hides_the_tools_from_the_model(port):
    body = {"model": "smollm2", "tools": [WEATHER], "tool_choice": "none",
            "messages": [{"role": "user", "content": "weather?"}]}
    _, _, raw = chat(port, body)
    assert json.loads(raw)["choices"][0]["message"]["content"] == "echo: weather?"


@pytest.mark.parametrize("key", [None, "sk-wrong", ""])
def test_no_or_wrong_key_is_401_json(port, key):
    status, headers, raw = chat(port, {"model": "smollm2", "messages": []}, key=key)
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert json.loads(raw)["error"]["code"] == "invalid_api_key"


def test_malformed_json_is_400_with_a_message(port):
    status, _, raw = chat(port, b'{"model": "smollm2", "messages": [')
    error = json.loads(raw)["error"]
    assert status == 400 and error["code"] == "invalid_json"
    assert error["message"].startswith("request body is not valid JSON: Expecting value: line 1 column")


@pytest.mark.parametrize("body, param, message", [
    ([1, 2], None, "request body must be a JSON object, got list"),
    ({"messages": [{"role": "user", "content": "x"}]}, "model", "model: required"),
    ({"model": "smollm2", "messages": []}, "messages", "messages: required, a non-empty list"),
    ({"model": "smollm2", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "must be one of"),
    ({"model": "smollm2", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "max_tokens",
     "max_tokens: must be between 1 and 4096, got 0"),
    ({"model": "smollm2", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "temperature",
     "temperature: must be a number"),
    ({"model": "smollm2", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
     "tools[0]", "tools[0]: must be"),
    ({"model": "smollm2", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id",
     "tool_call_id: required"),
])
def test_invalid_requests_are_400_naming_the_field(port, body, param, message):
    status, _, raw = chat(port, json.dumps(body).encode())
    error = json.loads(raw)["error"]
    assert status == 400 and error["param"] == param and message in error["message"]


def test_another_tenants_model_answers_exactly_like_a_made_up_one(port):
    body = {"model": "acme/private", "messages": [{"role": "user", "content": "x"}]}
    assert chat(port, body, key="sk-acme-1")[0] == 200
    theirs = chat(port, body, key="sk-globex-2")
    made_up = chat(port, {**body, "model": "acme/nothing"}, key="sk-globex-2")
    assert theirs[0] == made_up[0] == 404 and json.loads(theirs[2])["error"]["code"] == "model_not_found"
    assert theirs[2].replace(b"acme/private", b"acme/nothing") == made_up[2]
    got = [request(port, "GET", f"/v1/models/acme/{name}", key="sk-globex-2") for name in ("private", "nothing")]
    assert got[0][0] == got[1][0] == 404 and got[0][2].replace(b"private", b"nothing") == got[1][2]


def test_model_list_shows_only_the_tenants_models(port):
    def ids(key):
        return [m["id"] for m in json.loads(request(port, "GET", "/v1/models", key=key)[2])["data"]]

    assert ids("sk-acme-1") == ["smollm2", "acme/private"]
    assert ids("sk-globex-2") == ["smollm2"]


def test_a_stored_completion_is_readable_by_its_tenant_only(port):
    status, _, raw = chat(port, {"model": "smollm2", "store": True, "messages": [{"role": "user", "content": "x"}]})
    completion = json.loads(raw)
    path = f"/v1/chat/completions/{completion['id']}"
    status, _, raw = request(port, "GET", path, key="sk-acme-1")
    assert status == 200 and json.loads(raw) == {**completion, "metadata": {}}
    status, _, raw = request(port, "GET", path, key="sk-globex-2")  # as if it did not exist
    assert status == 404 and json.loads(raw)["error"]["message"] == (
        f"no stored completion {completion['id']!r} (send store=true to keep one)")
    assert request(port, "GET", path, key="sk-nobody")[0] == 401
    assert request(port, "GET", "/v1/chat/completions/chatcmpl-missing", key="sk-acme-1")[0] == 404


def test_unknown_route_is_a_json_404(port):
    status, _, raw = request(port, "GET", "/v2/nothing", key="sk-acme-1")
    assert status == 404 and "error" in json.loads(raw)


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_schema_the_runtime_cannot_follow_is_a_400_before_any_stream(live_server, stream):
    from test_tenant_runtime_backend import backend

    def factory(spec):
        return backend("hi")[0]

    port = live_server(create_app(ServerConfig.from_keys(KEYS, MODELS), factory)).port
    bad = {"type": "function", "function": {"name": "bad name!", "parameters": {"type": "object"}}}
    status, headers, raw = chat(port, {"model": "smollm2", "stream": stream, "tools": [bad],
                                       "messages": [{"role": "user", "content": "x"}]})
    assert status == 400 and headers["content-type"] == "application/json"
    assert json.loads(raw)["error"]["message"].startswith("tools: tool 'bad name!'")
    status, _, raw = chat(port, {"model": "smollm2", "stream": stream, "messages": [{"role": "user", "content": "x"}]})
    if stream:
        text = "".join(e["choices"][0]["delta"].get("content", "") for e in sse_events(raw)[:-1])
    else:
        text = json.loads(raw)["choices"][0]["message"]["content"]
    assert status == 200 and text == "hi"
