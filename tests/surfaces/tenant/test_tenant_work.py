"""Issue 21.3: abandoned requests stop, requests have a time limit, the queue is bounded and fair."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest
from bonsai_tenant import http_io
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import Limits, ModelSpec, ServerConfig
from http_client import request, sse_events
from scripted_model import scripted_backend

KEYS = {"acme": "sk-a", "globex": "sk-g"}
MODELS = {"m": ModelSpec("m")}


def serve(live_server, backend, **limits) -> int:
    return live_server(create_app(ServerConfig.from_keys(KEYS, MODELS, Limits(**limits)), lambda spec: backend)).port


def raw_post(port: int, body: dict, key: str = "sk-a") -> socket.socket:
    """Send a chat request on a bare socket and return it unread (the test decides when to hang up)."""
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Authorization: Bearer {key}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def wait_until(check, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


LONG = {"model": "m", "max_tokens": 4000, "messages": [{"role": "user", "content": "go"}]}


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_hangs_up_stops_its_generation(live_server, stream):
    backend, model, _ = scripted_backend("x" * 4000, delay=0.01)
    port = serve(live_server, backend)
    sock = raw_post(port, {**LONG, "stream": stream})
    assert model.running.wait(10)
    if stream:
        assert b"data: " in sock.recv(65536)  # the stream has begun
    sock.close()
    assert model.stopped.wait(5), "the generation went on after the client left"
    steps = model.steps
    assert steps < 4000
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-g", timeout=10,
                             body={**LONG, "max_tokens": 1})
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "x"


def test_mutation_a_hang_up_that_does_not_cancel_the_turn_is_caught(live_server, monkeypatch):
    """Inject the old behaviour: the server notices the hang-up but never cancels the turn."""
    monkeypatch.setattr(http_io, "cancel", lambda events: None)
    backend, model, _ = scripted_backend("x" * 400, delay=0.01)
    port = serve(live_server, backend)
    sock = raw_post(port, {**LONG, "max_tokens": 400})
    assert model.running.wait(10)
    sock.close()
    assert not model.stopped.wait(1.5)  # what the test above asserts within 5 s
    assert model.stopped.wait(30) and model.steps == 400  # it ran to the end for nobody


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_over_the_time_limit_is_stopped_and_answered_with_a_json_error(live_server, stream):
    backend, model, _ = scripted_backend("x" * 4000, delay=0.01)
    port = serve(live_server, backend, request_timeout=0.5)
    started = time.monotonic()
    status, headers, raw = request(port, "POST", "/v1/chat/completions", key="sk-a", body={**LONG, "stream": stream})
    assert time.monotonic() - started < 5
    if stream:
        events = sse_events(raw)
        assert status == 200 and events[-1] == "[DONE]"
        error = events[-2]["error"]
    else:
        assert status == 504 and headers["content-type"] == "application/json"
        error = json.loads(raw)["error"]
    assert error["code"] == "timeout" and "0.5 s" in error["message"]
    assert model.stopped.wait(5) and model.steps < 4000


def test_a_full_queue_answers_429_with_retry_after_and_recovers(live_server):
    backend, model, _ = scripted_backend("x" * 50, delay=0.01)
    port = serve(live_server, backend, queue_size=2)
    results: list[tuple[int, dict, bytes]] = []

    def ask():
        results.append(request(port, "POST", "/v1/chat/completions", key="sk-a", timeout=60,
                               body={**LONG, "max_tokens": 20}))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    refused = [r for r in results if r[0] == 429]
    served = [r for r in results if r[0] == 200]
    assert len(refused) + len(served) == 8 and refused and len(served) >= 2
    status, headers, raw = refused[0]
    assert int(headers["retry-after"]) >= 1 and headers["content-type"] == "application/json"
    assert json.loads(raw)["error"]["code"] == "queue_full" and json.loads(raw)["error"]["type"] == "rate_limit_error"
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a", body={**LONG, "max_tokens": 3})
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "xxx"


def test_one_tenants_burst_does_not_starve_another(live_server):
    """acme sends 6 requests at once; globex's one, sent just after, is served second, not seventh."""
    backend, model, _ = scripted_backend("y" * 30, delay=0.01)
    port = serve(live_server, backend, queue_size=16)
    done: list[tuple[str, float]] = []
    lock = threading.Lock()

    def ask(key: str):
        status, _, _ = request(port, "POST", "/v1/chat/completions", key=key, timeout=120,
                               body={**LONG, "max_tokens": 30})
        with lock:
            done.append((key, time.monotonic()))
        assert status == 200

    burst = [threading.Thread(target=ask, args=("sk-a",)) for _ in range(6)]
    for t in burst:
        t.start()
    assert wait_until(lambda: model.running.is_set())
    time.sleep(0.1)  # acme's other five are queued by now
    late = threading.Thread(target=ask, args=("sk-g",))
    late.start()
    for t in [*burst, late]:
        t.join(120)
    order = [key for key, _ in sorted(done, key=lambda d: d[1])]
    assert len(order) == 7 and order.index("sk-g") == 1, order


def test_a_stream_that_hangs_up_while_queued_never_runs(live_server):
    backend, model, _ = scripted_backend("z" * 200, delay=0.01)
    port = serve(live_server, backend)
    first = raw_post(port, {**LONG, "max_tokens": 150})
    assert model.running.wait(10)
    queued = raw_post(port, {**LONG, "stream": True, "max_tokens": 150}, key="sk-g")
    time.sleep(0.2)
    queued.close()
    first.recv(65536)
    first.close()
    assert wait_until(lambda: model.stopped.is_set() and not model.running.is_set())
    time.sleep(0.3)
    assert len(model.prompts) == 1  # the hung-up stream never reached the model


def test_the_connection_stays_usable_after_each_refusal(live_server):
    backend, _, _ = scripted_backend("ok")
    port = serve(live_server, backend, max_body_bytes=1024)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for body, status in [(b"[" * 100, 400), (json.dumps({"model": "m", "messages": []}).encode(), 400),
                         (json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(), 200)]:
        conn.request("POST", "/v1/chat/completions", body=body,
                     headers={"Authorization": "Bearer sk-a", "Content-Type": "application/json"})
        response = conn.getresponse()
        assert (response.status, response.getheader("content-type")) == (status, "application/json")
        response.read()
