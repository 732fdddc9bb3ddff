"""Stored completions and usage over real HTTP, against SQLite and a real PostgreSQL server (the
`database` fixture runs each test on both): store, list (paged, filtered), get, messages, update,
delete, one tenant's only; usage per request; daily quotas; retention."""

from __future__ import annotations

import json

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.store import completions as completions_module
from bonsai_tenant.store import open_store
from bonsai_tenant.tenants import ModelSpec, ServerConfig
from fake_backend import make_backend
from http_client import request, sse_events

KEYS = {"acme": "sk-acme", "globex": "sk-globex"}
MODELS = {"small": ModelSpec("small"), "large": ModelSpec("large")}


class Api:
    """A server on a scripted backend and one database, called as tenants."""

    def __init__(self, port: int) -> None:
        self.port = port

    def __call__(self, method: str, path: str, body=None, key: str = "sk-acme") -> tuple[int, dict]:
        status, _, raw = request(self.port, method, path, body, key=key)
        return status, json.loads(raw)

    def chat(self, text: str, key: str = "sk-acme", **extra) -> dict:
        status, body = self("POST", "/v1/chat/completions", {
            "model": "small", "messages": [{"role": "user", "content": text}], **extra}, key=key)
        assert status == 200, body
        return body

    def ids(self, query: str = "", key: str = "sk-acme") -> list[str]:
        status, body = self("GET", f"/v1/chat/completions{query}", key=key)
        assert status == 200, body
        return [c["id"] for c in body["data"]]


def serve(live_server, database, clock=None, **tenant_settings) -> Api:
    config = ServerConfig.from_keys(KEYS, MODELS, database=database, **tenant_settings)
    store = open_store(database, {t.name: t.retention_days for t in config.tenants},
                       **({"now": clock} if clock else {}))
    return Api(live_server(create_app(config, make_backend, store=store)).port)


@pytest.fixture
def api(live_server, database):
    return serve(live_server, database)


def test_a_stored_completion_comes_back_with_its_metadata_and_messages(api):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]
    status, created = api("POST", "/v1/chat/completions", {"model": "small", "messages": messages, "store": True,
                                                            "metadata": {"topic": "greeting"}})
    assert status == 200
    status, got = api("GET", f"/v1/chat/completions/{created['id']}")
    assert status == 200 and got == {**created, "metadata": {"topic": "greeting"}}
    status, listed = api("GET", f"/v1/chat/completions/{created['id']}/messages")
    assert status == 200 and listed["data"] == [{"id": f"{created['id']}-0", **messages[0]},
                                                {"id": f"{created['id']}-1", **messages[1]}]
    assert (listed["first_id"], listed["last_id"], listed["has_more"]) == (f"{created['id']}-0",
                                                                           f"{created['id']}-1", False)
    _, page = api("GET", f"/v1/chat/completions/{created['id']}/messages?limit=1&order=desc")
    assert [m["id"] for m in page["data"]] == [f"{created['id']}-1"] and page["has_more"] is True
    _, page = api("GET", f"/v1/chat/completions/{created['id']}/messages?after={created['id']}-0")
    assert [m["content"] for m in page["data"]] == ["hello there"]


def test_only_store_true_is_kept_and_a_stream_is_kept_whole(api):
    api.chat("not kept")
    status, _, raw = request(api.port, "POST", "/v1/chat/completions", {
        "model": "small", "stream": True, "store": True, "messages": [{"role": "user", "content": "a b c"}]},
        key="sk-acme")
    chunks = [e for e in sse_events(raw) if e != "[DONE]"]
    assert status == 200 and sse_events(raw)[-1] == "[DONE]"
    status, got = api("GET", f"/v1/chat/completions/{chunks[0]['id']}")
    assert status == 200 and got["choices"][0]["message"]["content"] == "echo: a b c"
    assert got["object"] == "chat.completion" and got["usage"]["completion_tokens"] == 4
    assert api.ids() == [chunks[0]["id"]]


def test_the_list_pages_in_order_and_filters_by_model_and_metadata(api):
    made = []
    for i in range(5):
        body = {"model": "large" if i % 2 else "small", "messages": [{"role": "user", "content": f"n{i}"}],
                "store": True, "metadata": {"batch": "b1" if i < 3 else "b2", "n": str(i)}}
        status, created = api("POST", "/v1/chat/completions", body)
        assert status == 200
        made.append(created["id"])
    assert api.ids() == made
    assert api.ids("?order=desc") == made[::-1]
    status, first = api("GET", "/v1/chat/completions?limit=2")
    assert [c["id"] for c in first["data"]] == made[:2] and first["has_more"] is True
    assert (first["first_id"], first["last_id"]) == (made[0], made[1])
    assert api.ids(f"?limit=2&after={made[1]}") == made[2:4]
    assert api.ids(f"?after={made[4]}") == []
    assert api.ids(f"?order=desc&after={made[3]}") == made[2::-1]
    assert api.ids("?model=large") == [made[1], made[3]]
    assert api.ids("?metadata[batch]=b1") == made[:3]
    assert api.ids("?metadata[batch]=b1&metadata[n]=2") == [made[2]]
    assert api.ids("?metadata[batch]=b1&model=large") == [made[1]]
    assert api.ids("?metadata[batch]=nope") == []


def test_metadata_is_replaced_and_deletion_is_final(api):
    created = api.chat("x", store=True, metadata={"a": "1"})
    path = f"/v1/chat/completions/{created['id']}"
    status, updated = api("POST", path, {"metadata": {"b": "2"}})
    assert status == 200 and updated["metadata"] == {"b": "2"} and updated["id"] == created["id"]
    assert api.ids("?metadata[a]=1") == [] and api.ids("?metadata[b]=2") == [created["id"]]
    assert api("GET", path)[1]["metadata"] == {"b": "2"}
    assert api("POST", path, {"metadata": None})[1]["metadata"] == {}
    status, gone = api("DELETE", path)
    assert status == 200 and gone == {"object": "chat.completion.deleted", "id": created["id"], "deleted": True}
    assert api("GET", path)[0] == 404 and api("DELETE", path)[0] == 404 and api.ids() == []
    assert api("GET", f"{path}/messages")[0] == 404


@pytest.mark.parametrize("method, query_or_body, param", [
    ("GET", "?limit=0", "limit"), ("GET", "?limit=101", "limit"), ("GET", "?order=up", "order"),
    ("GET", "?page=2", "page"), ("GET", "?after=chatcmpl-nothing", "after"),
    ("POST", {"metadata": {"k": 1}}, "metadata"), ("POST", {"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ("POST", {"model": "x", "metadata": {}}, "model"), ("POST", {}, "metadata"),
])
def test_bad_list_and_update_parameters_name_the_parameter(api, method, query_or_body, param):
    created = api.chat("x", store=True)
    if method == "GET":
        status, body = api("GET", f"/v1/chat/completions{query_or_body}")
    else:
        status, body = api("POST", f"/v1/chat/completions/{created['id']}", query_or_body)
    assert status in (400, 404) and body["error"]["param"] == param, body


def test_a_metadata_value_that_breaks_the_rules_is_refused_before_generating(api):
    status, body = api("POST", "/v1/chat/completions", {"model": "small", "store": True, "metadata": {"k": "v" * 513},
                                                        "messages": [{"role": "user", "content": "x"}]})
    assert status == 400 and body["error"]["param"] == "metadata"
    assert api.ids() == []


def leaks(api: Api) -> list[str]:
    """What globex can learn or change of acme's stored completion; [] when tenants are kept apart.
    Every answer about acme's id must equal, byte for byte (the id aside), the answer about an id
    that never existed."""
    own = api.chat("secret of acme", store=True, metadata={"owner": "acme"})["id"]
    never = "chatcmpl-" + "0" * 24
    found: list[str] = []

    def same_as_missing(method: str, suffix: str, body=None) -> None:
        theirs = api(method, f"/v1/chat/completions/{own}{suffix}", body, key="sk-globex")
        missing = api(method, f"/v1/chat/completions/{never}{suffix}", body, key="sk-globex")
        if json.dumps(theirs).replace(own, never) != json.dumps(missing) or theirs[0] != 404:
            found.append(f"{method} {suffix or '/'}: {theirs}")

    same_as_missing("GET", "")
    same_as_missing("GET", "/messages")
    same_as_missing("POST", "", {"metadata": {"owner": "globex"}})
    same_as_missing("DELETE", "")
    if api.ids(key="sk-globex") or api.ids("?metadata[owner]=acme", key="sk-globex"):
        found.append("globex lists acme's completion")
    theirs = api("GET", f"/v1/chat/completions?after={own}", key="sk-globex")
    missing = api("GET", f"/v1/chat/completions?after={never}", key="sk-globex")
    if json.dumps(theirs).replace(own, never) != json.dumps(missing):
        found.append(f"after= tells acme's id from a missing one: {theirs}")
    status, kept = api("GET", f"/v1/chat/completions/{own}")
    if status != 200 or kept["metadata"] != {"owner": "acme"}:
        found.append(f"acme's completion was changed or deleted by globex: {status} {kept}")
    return found


def test_one_tenant_can_neither_read_list_update_nor_delete_anothers(api):
    assert leaks(api) == []
    globex = api.chat("globex's own", key="sk-globex", store=True)["id"]
    assert api.ids(key="sk-globex") == [globex] and len(api.ids()) == 1


def test_the_isolation_check_catches_a_query_that_forgets_the_tenant(api, monkeypatch):
    """Mutation: the stored-completion queries drop their tenant filter; the check must see it."""
    monkeypatch.setattr(completions_module, "_live", lambda tenant, oldest: completions_module.table.c.seq > 0)
    assert leaks(api) != []


def test_usage_is_counted_per_tenant_model_and_day(live_server, database):
    api = serve(live_server, database)
    expected = {("acme", "small"): [0, 0, 0], ("acme", "large"): [0, 0, 0], ("globex", "small"): [0, 0, 0]}
    for key, model, text in [("sk-acme", "small", "a"), ("sk-acme", "small", "b c"), ("sk-acme", "large", "d"),
                             ("sk-globex", "small", "e f g")]:
        status, body = api("POST", "/v1/chat/completions", {"model": model, "messages": [{"role": "user",
                                                                                           "content": text}]}, key=key)
        row = expected[(key[3:], model)]
        row[0], row[1], row[2] = row[0] + 1, row[1] + body["usage"]["prompt_tokens"], \
            row[2] + body["usage"]["completion_tokens"]
    _, _, raw = request(api.port, "POST", "/v1/chat/completions", {
        "model": "small", "stream": True, "messages": [{"role": "user", "content": "s t"}],
        "stream_options": {"include_usage": True}}, key="sk-acme")
    streamed = sse_events(raw)[-2]["usage"]
    expected[("acme", "small")] = [expected[("acme", "small")][0] + 1,
                                   expected[("acme", "small")][1] + streamed["prompt_tokens"],
                                   expected[("acme", "small")][2] + streamed["completion_tokens"]]
    store = open_store(database)
    rows = {(r.tenant, r.model): [r.requests, r.prompt_tokens, r.completion_tokens] for r in store.usage()}
    assert rows == expected
    assert {r.tenant for r in store.usage("globex")} == {"globex"}
    store.close()


def until_refused(api: Api, tries: int = 30) -> tuple[int, dict[str, str], dict, int]:
    """Requests (max_tokens 100) until one is refused: (its status, headers, body; tokens used before)."""
    ask = {"model": "small", "messages": [{"role": "user", "content": "one two three"}], "max_tokens": 100}
    used = 0
    for _ in range(tries):
        status, headers, raw = request(api.port, "POST", "/v1/chat/completions", ask, key="sk-acme")
        if status != 200:
            return status, headers, json.loads(raw), used
        used += json.loads(raw)["usage"]["total_tokens"]
    return status, headers, json.loads(raw), used


def test_a_daily_token_quota_is_a_429_until_midnight_utc(live_server, database):
    api = serve(live_server, database, daily_token_quota=200)
    status, headers, body, used = until_refused(api)
    error = body["error"]
    assert status == 429 and error["code"] == "daily_quota_exceeded" and error["type"] == "insufficient_quota"
    assert 0 < used <= 200  # a request runs only if its prompt and max_tokens fit in what is left
    assert error["message"].startswith(f"tenant 'acme' has used {used} of its 200 tokens for today (UTC)")
    assert "lower max_tokens" in error["message"]
    assert 1 <= int(headers["retry-after"]) <= 86400
    assert api.chat("x", max_tokens=1)["usage"]["total_tokens"] > 0  # a smaller request fits what is left
    assert api.chat("globex is not acme", key="sk-globex", max_tokens=5)["usage"]["total_tokens"] > 0
    status, body = api("POST", "/v1/chat/completions", {"model": "small", "max_tokens": 300,
                                                        "messages": [{"role": "user", "content": "x"}]})
    assert status == 400 and body["error"]["param"] == "max_tokens"  # more than the whole quota: no waiting helps


def test_the_quota_check_would_catch_a_server_that_ignores_the_quota(live_server, database, monkeypatch):
    """Mutation: the quota hold ignores the quota; the 429 must then be missing."""
    from bonsai_tenant.store import holds

    real = holds.reserve
    monkeypatch.setattr(holds, "reserve", lambda conn, tenant, model, day, tokens, quota:
                        real(conn, tenant, model, day, tokens, None))
    api = serve(live_server, database, daily_token_quota=200)
    assert until_refused(api)[0] == 200


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def retained(live_server, database, monkeypatch) -> tuple[int, list[str], int]:
    """Store one completion, let 2 days pass with 1 day's retention, store another: (status of the
    first's GET, the ids listed, rows left in the database)."""
    import time
    import types

    import bonsai_tenant.openai_response as response

    clock = Clock(time.time())
    monkeypatch.setattr(response, "time", types.SimpleNamespace(time=clock))  # the completions' `created`
    api = serve(live_server, database, clock=clock, retention_days=1)
    old = api.chat("old", store=True)["id"]
    clock.now += 2 * 86400
    new = api.chat("new", store=True)["id"]
    store = open_store(database)
    rows = store.count("acme")
    store.close()
    assert api.ids() in ([new], [old, new])
    return api("GET", f"/v1/chat/completions/{old}")[0], api.ids(), rows


def test_retention_deletes_a_tenants_old_completions(live_server, database, monkeypatch):
    status, listed, rows = retained(live_server, database, monkeypatch)
    assert status == 404 and len(listed) == 1 and rows == 1


def test_the_retention_check_catches_a_store_that_keeps_everything(live_server, database, monkeypatch):
    """Mutation: the cutoff says 'keep everything'; the old completion must then still be there."""
    monkeypatch.setattr("bonsai_tenant.store.store.cutoff", lambda days, now: None)
    status, listed, rows = retained(live_server, database, monkeypatch)
    assert (status, len(listed), rows) == (200, 2, 2)


def test_another_tenants_model_answers_like_a_made_up_one(live_server, database):
    models = {**MODELS, "acme/private": ModelSpec("acme/private", tenants=frozenset({"acme"}))}
    api = Api(live_server(create_app(ServerConfig.from_keys(KEYS, models, database=database), make_backend)).port)
    ask = {"messages": [{"role": "user", "content": "x"}], "store": True}
    assert api("POST", "/v1/chat/completions", {**ask, "model": "acme/private"})[0] == 200
    theirs = api("POST", "/v1/chat/completions", {**ask, "model": "acme/private"}, key="sk-globex")
    made_up = api("POST", "/v1/chat/completions", {**ask, "model": "acme/nothing"}, key="sk-globex")
    assert theirs[0] == made_up[0] == 404
    assert json.dumps(theirs).replace("acme/private", "acme/nothing") == json.dumps(made_up)
    assert api.ids(key="sk-globex") == [] and api.ids("?model=acme/private", key="sk-globex") == []
