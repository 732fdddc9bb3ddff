"""Constrained tool calls cut short by max_tokens: finish_reason "length", no markup in `content`, the
half call never shown as text (stored completions included, on SQLite and PostgreSQL); every call
has an id of its own."""

from __future__ import annotations

import json
import re

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.store import open_store
from bonsai_tenant.tenants import ModelSpec, ServerConfig
from http_client import request, sse_events
from scripted_model import call_text, scripted_backend

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
FIRST, SECOND = call_text("get_weather", {"city": "Paris"}), call_text("get_time", {"zone": "Asia/Tokyo"})


def ask(port: int, max_tokens: int, stream: bool) -> dict:
    """A forced-call request as the client sees it: {content, tool_calls, finish_reason, id}."""
    body = {"model": "m", "messages": [{"role": "user", "content": "weather and time?"}], "tools": [WEATHER, TIME],
            "tool_choice": "required", "max_tokens": max_tokens, "stream": stream, "store": True}
    status, _, raw = request(port, "POST", "/v1/chat/completions", body, key="sk-a")
    assert status == 200, raw
    if not stream:
        reply = json.loads(raw)
        choice = reply["choices"][0]
        return {"content": choice["message"]["content"], "tool_calls": choice["message"].get("tool_calls") or [],
                "finish_reason": choice["finish_reason"], "id": reply["id"]}
    chunks = [e for e in sse_events(raw) if e != "[DONE]"]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    return {"content": "".join(d.get("content") or "" for d in deltas),
            "tool_calls": [t for d in deltas for t in d.get("tool_calls") or []],
            "finish_reason": chunks[-1]["choices"][0]["finish_reason"], "id": chunks[0]["id"]}


@pytest.fixture
def served(live_server, database):
    backend, _, _ = scripted_backend(FIRST + "\n" + SECOND)
    config = ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}, database=database)
    return live_server(create_app(config, lambda spec: backend)).port, database


def stored(database, completion_id: str) -> dict:
    store = open_store(database)
    try:
        return store.get("acme", completion_id)
    finally:
        store.close()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("cut", [6, 30, len(FIRST) - 3])  # in the opening tag, the JSON, the closing tag
def test_a_call_cut_short_is_length_with_no_markup_and_no_call(served, stream, cut):
    port, database = served
    reply = ask(port, cut, stream)
    assert reply["finish_reason"] == "length" and reply["tool_calls"] == []
    assert "<" not in (reply["content"] or ""), reply
    kept = stored(database, reply["id"])["choices"][0]
    assert kept["finish_reason"] == "length" and "<" not in (kept["message"]["content"] or "")


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_calls_cut_in_the_second_keep_the_first_only(served, stream):
    port, database = served
    reply = ask(port, len(FIRST) + 1 + 25, stream)
    assert [c["function"]["name"] for c in reply["tool_calls"]] == ["get_weather"]
    assert reply["finish_reason"] == "length" and not (reply["content"] or "").strip(), reply
    kept = stored(database, reply["id"])["choices"][0]
    assert kept["message"]["content"] is None and len(kept["message"]["tool_calls"]) == 1


def test_every_call_has_an_id_of_its_own(served):
    port, _ = served
    ids = [c["id"] for _ in range(2) for c in ask(port, 200, False)["tool_calls"]]
    assert len(ids) == 4 and len(set(ids)) == 4 and all(re.fullmatch(r"call_[0-9a-f]{24}", i) for i in ids)
    whole = ask(port, 200, True)
    assert whole["finish_reason"] == "tool_calls" and whole["content"].strip() == ""
