"""Client strings the database cannot hold, and numbers Python cannot read, are 400s naming the
parameter before any work, on SQLite and PostgreSQL: never a 500, a 503 outage, or a lost record."""

from __future__ import annotations

import json

import pytest
from bonsai_tenant.store import open_store
from http_client import request
from test_tenant_stored_api import serve

ASK = [{"role": "user", "content": "hello"}]
BAD_TEXT = {"surrogate": "\ud800", "nul": "a\x00b"}


def usage_total(database) -> int:
    store = open_store(database)
    try:
        return sum(r.total_tokens for r in store.usage())
    finally:
        store.close()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("where", ["value", "key"])
@pytest.mark.parametrize("kind", sorted(BAD_TEXT))
def test_metadata_the_database_cannot_hold_is_a_400_before_generating(live_server, database, kind, where, stream):
    api = serve(live_server, database)
    text = BAD_TEXT[kind]
    metadata = {"k": text} if where == "value" else {text: "v"}
    status, _, raw = request(api.port, "POST", "/v1/chat/completions", {
        "model": "small", "messages": ASK, "store": True, "stream": stream, "metadata": metadata}, key="sk-acme")
    body = json.loads(raw)
    assert status == 400 and body["error"]["param"] == "metadata", raw
    assert ("NUL" if kind == "nul" else "surrogate") in body["error"]["message"]
    assert api.ids() == [] and usage_total(database) == 0
    created = api.chat("kept", store=True)["id"]
    status, body = api("POST", f"/v1/chat/completions/{created}", {"metadata": metadata})
    assert status == 400 and body["error"]["param"] == "metadata", body


@pytest.mark.parametrize("path, param", [
    ("/v1/chat/completions/chatcmpl-%00", "completion_id"),
    ("/v1/chat/completions/chatcmpl-%00/messages", "completion_id"),
    ("/v1/chat/completions?after=chatcmpl-%00", "after"),
    ("/v1/chat/completions?model=sm%00all", "model"),
    ("/v1/chat/completions?metadata[k]=v%00", "metadata[k]"),
    ("/v1/chat/completions?metadata[k%00]=v", "metadata[k\x00]"),
])
def test_a_nul_in_a_stored_id_or_filter_is_a_400_not_a_database_outage(live_server, database, path, param):
    api = serve(live_server, database)
    api.chat("kept", store=True)
    for method in ("GET", "DELETE") if param == "completion_id" and "messages" not in path else ("GET",):
        status, body = api(method, path)
        assert status == 400 and body["error"]["param"] == param, (method, body)
        assert body["error"]["code"] != "database_unavailable"
    assert len(api.ids()) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_seed_too_long_to_read_is_a_400_naming_it(live_server, database, stream):
    api = serve(live_server, database)
    raw_body = (f'{{"model": "small", "messages": [{{"role": "user", "content": "x"}}], '
                f'"stream": {json.dumps(stream)}, "seed": {"9" * 5000}}}').encode()
    status, _, raw = request(api.port, "POST", "/v1/chat/completions", raw_body, key="sk-acme")
    body = json.loads(raw)
    assert status == 400 and body["error"]["param"] == "seed" and "5000 digits" in body["error"]["message"], body
    nested = b'{"model": "small", "messages": [{"role": "user", "content": -%s}]}' % (b"1" * 4400)
    status, _, raw = request(api.port, "POST", "/v1/chat/completions", nested, key="sk-acme")
    assert status == 400 and json.loads(raw)["error"]["param"] == "messages[0].content", raw
    assert usage_total(database) == 0


def test_max_tokens_that_leaves_no_room_names_max_tokens(live_server):
    from bonsai_tenant.server import create_app
    from bonsai_tenant.tenants import ModelSpec, ServerConfig
    from scripted_model import scripted_backend

    backend, _, _ = scripted_backend("hi", max_positions=64)
    app = create_app(ServerConfig.from_keys({"acme": "sk-acme"}, {"m": ModelSpec("m")}), lambda spec: backend)
    port = live_server(app).port
    status, _, raw = request(port, "POST", "/v1/chat/completions", {"model": "m", "messages": ASK, "max_tokens": 64},
                             key="sk-acme")
    assert status == 400 and json.loads(raw)["error"]["param"] == "max_tokens", raw


def test_a_value_the_database_refuses_as_data_is_told_apart_from_an_outage(database):
    """Behind the door: were a NUL to reach PostgreSQL, its refusal is StoreRefused (a 400 at the API),
    not the StoreError of a database that is down (a 503)."""
    from bonsai_tenant.store import StoreRefused

    store = open_store(database)
    try:
        if database.is_sqlite:
            assert store.get("acme", "chatcmpl-\x00") is None  # SQLite compares a NUL like any byte
        else:
            with pytest.raises(StoreRefused):
                store.get("acme", "chatcmpl-\x00")
    finally:
        store.close()
