"""Every token a request generates is counted, however it ends, and no quota is passed, on SQLite and
PostgreSQL: holds are atomic across requests and servers; abandoned streams, failing storage and
server errors are settled to the tokens actually generated."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.store import StoreError, open_store
from bonsai_tenant.store import completions as completions_module
from bonsai_tenant.tenants import Limits, ModelSpec, ServerConfig
from http_client import request, sse_events
from scripted_model import ScriptedModel, scripted_backend
from test_tenant_work import raw_post, wait_until

M = 16  # max_tokens of every request here; the reply is longer, so each generates exactly M unless stopped
ASK = {"model": "m", "max_tokens": M, "messages": [{"role": "user", "content": "go"}]}


class CountingModel(ScriptedModel):
    """A scripted model that counts the tokens it handed to the server (its ground truth)."""

    def __init__(self, *replies: str, delay: float) -> None:
        super().__init__(*replies, delay=delay)
        self.generated = 0

    def __call__(self, prompt_ids, settings, processor, on_token, cancelled):
        def counted(token, logprob):
            on_token(token, logprob)  # raises when the server stopped the turn: that token never existed for it
            self.generated += 1

        return super().__call__(prompt_ids, settings, processor, counted, cancelled)


def usage_of(database, tenant: str = "acme") -> tuple[int, int]:
    """(requests counted, tokens counted) for `tenant` today."""
    store = open_store(database)
    try:
        rows = store.usage(tenant)
        return sum(r.requests for r in rows), sum(r.total_tokens for r in rows)
    finally:
        store.close()


def serve_counting(live_server, database, quota: int | None) -> tuple[int, CountingModel, int]:
    """(port, model, the prompt's tokens) of a server whose tenant acme has `quota` tokens a day, where
    `quota` is a function of the prompt's tokens (None: no quota)."""
    backend, _, _ = scripted_backend("x" * 200)
    model = CountingModel("x" * 200, delay=0.05)
    backend.parts = dataclasses.replace(backend.parts, generate=model)
    prompt = backend.stream(ASK["messages"], tools=[], max_tokens=M, temperature=0.0).prompt_size
    config = ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}, database=database,
                                    daily_token_quota=None if quota is None else quota(prompt))
    return live_server(create_app(config, lambda spec: backend)).port, model, prompt


def test_concurrent_abandoned_and_failing_storage_requests_are_counted_exactly_within_the_quota(
        live_server, database, monkeypatch):
    port, model, prompt = serve_counting(live_server, database, lambda prompt: 4 * (prompt + M) + prompt // 2)
    quota = 4 * (prompt + M) + prompt // 2

    # a stream read for three pieces, then abandoned: what was generated for it counts
    sock = raw_post(port, {**ASK, "stream": True})
    seen = b""
    while seen.count(b"data: ") < 4:
        seen += sock.recv(4096)
    sock.close()
    assert wait_until(lambda: usage_of(database)[0] == 1, 20)
    assert 0 < model.generated < M and usage_of(database)[1] == prompt + model.generated

    # a completion that cannot be stored: the client hears it, the tokens still count
    real_save = completions_module.save

    def failing_save(*args):
        raise StoreError("the disk is full")

    monkeypatch.setattr(completions_module, "save", failing_save)
    for stream in (False, True):
        status, _, raw = request(port, "POST", "/v1/chat/completions", {**ASK, "store": True, "stream": stream},
                                 key="sk-a")
        told = sse_events(raw)[-2] if stream else json.loads(raw)
        assert status == (200 if stream else 503) and told["error"]["code"] == "database_unavailable", raw
    monkeypatch.setattr(completions_module, "save", real_save)
    assert usage_of(database) == (3, 3 * prompt + model.generated)

    # six at once, with room left for fewer: each holds prompt + max_tokens and uses all of it
    room = quota - usage_of(database)[1]
    with ThreadPoolExecutor(6) as pool:
        statuses = list(pool.map(lambda _: request(port, "POST", "/v1/chat/completions", ASK, key="sk-a")[0],
                                 range(6)))
    assert sorted(statuses) == [200] * (room // (prompt + M)) + [429] * (6 - room // (prompt + M))
    requests, tokens = usage_of(database)
    assert tokens == sum(len(p) for p in model.prompts) + model.generated  # every generated token, no more
    assert tokens <= quota and requests == len(model.prompts)
    assert charged(database) == tokens  # every hold was given back down to what its request used


def charged(database, tenant: str = "acme") -> int:
    """What counts against `tenant`'s quota today: tokens used plus tokens held."""
    store = open_store(database)
    try:
        return store.reserve(tenant, "m", 0, None).charged
    finally:
        store.close()


def test_a_request_refused_by_a_full_queue_holds_nothing_and_the_others_give_back_what_they_did_not_use(live_server, database):
    backend, model, _ = scripted_backend("x" * 200, delay=0.02)
    config = ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}, database=database,
                                    daily_token_quota=10_000, limits=Limits(queue_size=1))
    port = live_server(create_app(config, lambda spec: backend)).port
    long = {**ASK, "max_tokens": 60}
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(request, port, "POST", "/v1/chat/completions", long, key="sk-a")
        assert wait_until(lambda: model.running.is_set())
        waiting = pool.submit(request, port, "POST", "/v1/chat/completions", long, key="sk-a")
        time.sleep(0.5)  # the second waits in the line (its hold taken), the model busy with the first
        assert charged(database) == 2 * (backend.stream(ASK["messages"], tools=[], max_tokens=60,
                                                        temperature=0.0).prompt_size + 60)
        refused = request(port, "POST", "/v1/chat/completions", long, key="sk-a")
        assert refused[0] == 429 and b"queue" in refused[2]
        assert first.result()[0] == waiting.result()[0] == 200
    requests, tokens = usage_of(database)
    assert requests == 2 == len(model.prompts) and charged(database) == tokens


def test_holds_are_atomic_across_servers(database):
    """Two stores (two engines and connection pools, as two server processes have) hold at once: the
    quota admits exactly as many holds as fit, and settling leaves the charge at what was used."""
    stores = [open_store(database), open_store(database)]
    try:
        barrier = threading.Barrier(12)

        def hold(i: int):
            barrier.wait()
            return stores[i % 2].reserve("acme", "m", 16, 100)

        with ThreadPoolExecutor(12) as pool:
            holds = list(pool.map(hold, range(12)))
        admitted = [h for h in holds if h.admitted]
        assert len(admitted) == 6 and max(h.charged for h in holds) == 96
        for h in admitted:
            stores[0].settle(h, 3, 2)
        assert usage_of(database) == (6, 30)
        assert stores[1].reserve("acme", "m", 70, 100).admitted and not stores[1].reserve("acme", "m", 1, 100).admitted
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_error_after_generation_still_counts_its_tokens(live_server, database, monkeypatch, stream):
    """An unexpected failure while keeping the reply (not the database's: a bug): a stream ends with an
    error event and [DONE], a plain request is a 500, and the tokens are counted either way."""
    port, model, prompt = serve_counting(live_server, database, None)

    def broken_save(*args):
        raise ValueError("a bug while keeping the reply")

    monkeypatch.setattr(completions_module, "save", broken_save)
    status, _, raw = request(port, "POST", "/v1/chat/completions", {**ASK, "store": True, "stream": stream},
                             key="sk-a")
    if stream:
        events = sse_events(raw)
        assert status == 200 and events[-1] == "[DONE]" and events[-2]["error"]["code"] == "internal_error", raw
    else:
        assert status == 500 and json.loads(raw)["error"]["code"] == "internal_error"
    assert usage_of(database) == (1, prompt + M) and model.generated == M
