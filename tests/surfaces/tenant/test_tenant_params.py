"""Issue 21.6 and 21.7: the OpenAI parameters clients send are honoured or refused, never ignored."""

from __future__ import annotations

import json

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import ModelSpec, ServerConfig
from fake_backend import make_backend
from http_client import request, sse_events
from scripted_model import scripted_backend

openai = pytest.importorskip("openai")
ASK = [{"role": "user", "content": "Describe Paris."}]


def serve(live_server, factory) -> int:
    return live_server(create_app(ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}), factory)).port


def client_for(live_server, *replies: str | bytes):
    backend, model, tokenizer = scripted_backend(*replies)
    port = serve(live_server, lambda spec: backend)
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-a", max_retries=0), model, port


def test_stop_sequences_end_the_reply_before_them(live_server):
    client, model, _ = client_for(live_server, "Paris is big. It has a river. END of text")
    reply = client.chat.completions.create(model="m", messages=ASK, stop=[". It", "river"])
    assert reply.choices[0].message.content == "Paris is big" and reply.choices[0].finish_reason == "stop"
    assert model.steps < len("Paris is big. It has")  # generation stopped there too
    stream = client.chat.completions.create(model="m", messages=ASK, stop="END", stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Paris is big. It has a river. "


def test_json_object_replies_are_one_json_object(live_server):
    """The model would rather chat; the reply is constrained to a JSON object."""
    client, _, _ = client_for(live_server, "Sure! Here you go.", '{"city": "Paris", "rivers": ["Seine"]}')
    reply = client.chat.completions.create(model="m", messages=ASK, response_format={"type": "json_object"})
    assert json.loads(reply.choices[0].message.content) == {"city": "Paris", "rivers": ["Seine"]}


def test_json_schema_replies_follow_the_schema(live_server):
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
              "required": ["city", "population"]}
    client, _, _ = client_for(live_server, '{"city": "Paris"}', '{"city": "Paris", "population": 2100000}')
    reply = client.chat.completions.create(model="m", messages=ASK, response_format={
        "type": "json_schema", "json_schema": {"name": "city", "schema": schema, "strict": True}})
    assert json.loads(reply.choices[0].message.content) == {"city": "Paris", "population": 2100000}


@pytest.mark.parametrize("response_format, message", [
    ({"type": "xml"}, "response_format.type: must be one of text, json_object, json_schema"),
    ({"type": "json_schema"}, "response_format.json_schema: required"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array"}}},
     "response_format.json_schema.schema: the root must be"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 3}}}}}, "unsupported schema keyword(s) ['minimum']"),
])
def test_a_response_format_the_server_cannot_follow_is_a_400(live_server, response_format, message):
    client, _, _ = client_for(live_server, "{}")
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=ASK, response_format=response_format)
    assert message in str(info.value)


def test_logprobs_come_back_per_token_with_alternatives(live_server):
    client, _, _ = client_for(live_server, "Hi!", "Ho")
    reply = client.chat.completions.create(model="m", messages=ASK, logprobs=True, top_logprobs=2)
    content = reply.choices[0].logprobs.content
    assert [t.token for t in content] == ["H", "i", "!"]
    assert all(t.logprob <= 0 and len(t.top_logprobs) == 2 for t in content)
    assert content[0].top_logprobs[0].token == "H" and content[0].bytes == [72]
    assert client.chat.completions.create(model="m", messages=ASK).choices[0].logprobs is None
    stream = client.chat.completions.create(model="m", messages=ASK, logprobs=True, stream=True)
    streamed = [t.token for c in stream if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
    assert streamed == ["H", "i", "!"]


def test_temperature_top_p_and_seed_reach_the_sampler(live_server):
    client, model, _ = client_for(live_server, "ok")
    client.chat.completions.create(model="m", messages=ASK, temperature=0.7, top_p=0.9, seed=42)
    settings = model.settings[-1]
    assert (settings.temperature, settings.top_p, settings.seed) == (0.7, 0.9, 42)


def test_seeded_sampling_on_the_model_repeats_per_seed(live_server, tiny_backend):
    """On the GPU engine through HTTP: the same seed, the same tokens (test_tenant_decode shows that
    different seeds differ; this tiny random model is too sure of itself to show it)."""
    port = serve(live_server, lambda spec: tiny_backend)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-a", max_retries=0)

    def sample(seed):
        reply = client.chat.completions.create(model="m", messages=ASK, temperature=2.0, max_tokens=6, seed=seed,
                                               logprobs=True)
        return [t.bytes for t in reply.choices[0].logprobs.content]

    assert sample(7) == sample(7)


@pytest.mark.parametrize("extra, param", [
    ({"store": "false"}, "store"),
    ({"n": 2}, "n"),
    ({"frequency_penalty": 0.5}, "frequency_penalty"),
    ({"presence_penalty": -1}, "presence_penalty"),
    ({"logit_bias": {"42": 5}}, "logit_bias"),
    ({"top_logprobs": 3}, "top_logprobs"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"stop": [""]}, "stop"),
    ({"seed": 1.5}, "seed"),
    ({"top_p": 1.5}, "top_p"),
    ({"functions": []}, "functions"),
    ({"audio": {"voice": "x"}}, "audio"),
    ({"modalities": ["text", "audio"]}, "modalities"),
    ({"frobnicate": True}, "frobnicate"),
    ({"parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ({"stream_options": {"include_usage": "yes"}}, "stream_options.include_usage"),
])
def test_parameters_that_cannot_be_honoured_are_400s_naming_them(live_server, extra, param):
    backend, _, _ = scripted_backend("ok")
    port = serve(live_server, lambda spec: backend)
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                             body={"model": "m", "messages": ASK, **extra})
    assert status == 400, raw
    assert json.loads(raw)["error"]["param"] == param


@pytest.mark.parametrize("extra", [
    {"n": None}, {"n": 1}, {"store": False}, {"frequency_penalty": 0}, {"presence_penalty": None},
    {"logit_bias": {}}, {"user": "u-1"}, {"metadata": {"k": "v"}}, {"service_tier": "auto"}, {"modalities": ["text"]},
    {"stop": None}, {"top_p": None}, {"seed": None}, {"logprobs": False}, {"response_format": {"type": "text"}},
])
def test_parameters_at_their_neutral_values_are_accepted(live_server, extra):
    backend, _, _ = scripted_backend("ok")
    port = serve(live_server, lambda spec: backend)
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                             body={"model": "m", "messages": ASK, **extra})
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "ok"


@pytest.mark.parametrize("extra, param", [
    ({"seed": 1}, "seed"), ({"stop": "x"}, "stop"), ({"top_p": 0.5}, "top_p"), ({"logprobs": True}, "logprobs"),
    ({"response_format": {"type": "json_object"}}, "response_format"),
    ({"tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f"}}]}, "tool_choice"),
])
def test_a_backend_that_does_not_honour_a_parameter_gets_a_400_not_silence(live_server, extra, param):
    """The scripted fake backend declares no features: the server refuses rather than ignore."""
    port = serve(live_server, make_backend)
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                             body={"model": "m", "messages": ASK, **extra})
    assert status == 400 and json.loads(raw)["error"]["param"] == param
    assert "not supported by model 'm'" in json.loads(raw)["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_max_tokens_cutting_a_character_sends_no_replacement_character(live_server, stream):
    """'é' is two bytes, two tokens here: max_tokens=4 ends inside it; the client never sees U+FFFD."""
    backend, _, _ = scripted_backend("abcé".encode())
    port = serve(live_server, lambda spec: backend)
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                             body={"model": "m", "messages": ASK, "max_tokens": 4, "stream": stream})
    if stream:
        text = "".join(e["choices"][0]["delta"].get("content", "") for e in sse_events(raw)[:-1] if e["choices"])
        finish = [e["choices"][0]["finish_reason"] for e in sse_events(raw)[:-1] if e["choices"]][-1]
    else:
        text = json.loads(raw)["choices"][0]["message"]["content"]
        finish = json.loads(raw)["choices"][0]["finish_reason"]
    assert (status, text, finish) == (200, "abc", "length")
    assert "\ufffd" not in raw.decode()
