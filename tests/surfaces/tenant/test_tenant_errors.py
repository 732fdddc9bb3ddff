"""Issue 21.4: JSON errors only, nothing of the server's inside in a response, bad setups refused at start."""

from __future__ import annotations

import http.client
import json

import pytest
from bonsai_tenant.cli import main
from bonsai_tenant.errors import ConfigError
from bonsai_tenant.events import Finish, TextDelta
from bonsai_tenant.server import create_app, default_backend_factory
from bonsai_tenant.tenants import ModelSpec, ServerConfig, key_digest, load_config
from fake_backend import make_backend
from http_client import request, sse_events

SECRET = "/srv/secret/models/acme.gguf"


class Exploding:
    """A backend whose generation fails after a word, with the server's paths in the exception."""

    def stream(self, messages, *, tools, max_tokens, temperature):
        yield TextDelta("partial")
        raise OSError(f"{SECRET}: read failed at byte 12345 (GGUF\\x03\\x00)")


@pytest.fixture
def port(live_server):
    return live_server(create_app(ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}),
                                  lambda spec: Exploding())).port


def test_a_deeply_nested_body_is_a_400_json_and_the_connection_stays_open(live_server):
    port = live_server(create_app(ServerConfig.from_keys({"acme": "sk-a"}), make_backend)).port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": "Bearer sk-a", "Content-Type": "application/json"}
    conn.request("POST", "/v1/chat/completions", body=b"[" * 100_000, headers=headers)
    response = conn.getresponse()
    assert response.status == 400 and response.getheader("content-type") == "application/json"
    assert json.loads(response.read())["error"]["message"] == "request body is not valid JSON: nested too deeply"
    nested: object = "x"
    for _ in range(70):  # parses (Python allows ~1,000 levels), but deeper than the server reads
        nested = [nested]
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "x"}], "metadata": {"a": nested}}
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(), headers=headers)
    response = conn.getresponse()  # the same keep-alive connection still answers
    assert response.status == 400 and "nested more than 64 levels" in json.loads(response.read())["error"]["message"]


def test_an_exception_mid_stream_sends_a_generic_error_without_internals(port, caplog):
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                             body={"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]})
    events = sse_events(raw)
    assert status == 200 and events[-1] == "[DONE]"
    error = events[-2]["error"]
    assert error["type"] == "server_error" and error["code"] == "internal_error"
    assert "secret" not in raw.decode() and "GGUF" not in raw.decode() and "OSError" not in raw.decode()
    assert error["message"].startswith("generation failed; the server log has the details (request ")
    assert SECRET in caplog.text  # the operator still sees it


def test_an_exception_without_streaming_is_a_generic_500_json(port):
    status, headers, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                                   body={"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert status == 500 and headers["content-type"] == "application/json"
    assert "secret" not in raw.decode() and "OSError" not in raw.decode()
    assert json.loads(raw)["error"]["code"] == "internal_error"


def test_an_unexpected_error_anywhere_is_a_json_500_not_plain_text(live_server, monkeypatch):
    import bonsai_tenant.server as server

    def broken(*args, **kwargs):
        raise RuntimeError(f"{SECRET} is broken")

    monkeypatch.setattr(server, "parse_chat_request", broken)
    port = live_server(create_app(ServerConfig.from_keys({"acme": "sk-a"}), make_backend)).port
    status, headers, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                                   body={"model": "smollm2", "messages": [{"role": "user", "content": "x"}]})
    assert status == 500 and headers["content-type"] == "application/json" and "secret" not in raw.decode()


def test_a_missing_model_file_stops_the_start_naming_the_model_not_a_request():
    config = ServerConfig.from_keys({"acme": "sk-a"}, {"acme/x": ModelSpec("acme/x", path="/nonexistent/x.gguf")})
    with pytest.raises(ConfigError, match=r"^models\.acme/x: /nonexistent/x\.gguf: no such model file$"):
        create_app(config, default_backend_factory)


def test_an_invalid_model_file_stops_the_start_with_one_line(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 64)
    config = ServerConfig.from_keys({"acme": "sk-a"}, {"bad": ModelSpec("bad", path=str(bad))})
    with pytest.raises(ConfigError) as info:
        create_app(config, default_backend_factory)
    assert str(info.value).startswith("models.bad: ") and "\n" not in str(info.value)


def test_serve_refuses_to_start_with_a_bad_model_in_one_line(tmp_path, capsys):
    path = tmp_path / "tenants.toml"
    path.write_text(f'[tenants.acme]\napi-key-sha256 = "{key_digest("k")}"\n[models.x]\npath = "/nonexistent.gguf"\n')
    assert main(["serve", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == "bonsai-tenant: error: models.x: /nonexistent.gguf: no such model file\n"


def test_two_tenants_with_the_same_key_are_refused(tmp_path):
    path = tmp_path / "tenants.toml"
    path.write_text(f'[tenants.acme]\napi-key-env = "A"\n[tenants.globex]\napi-key-sha256 = "{key_digest("sk-the-same-key-twice")}"\n')
    with pytest.raises(ConfigError, match=r"tenants\.globex: has the same API key as tenants\.acme"):
        load_config(path, environ={"A": "sk-the-same-key-twice"})
    with pytest.raises(ConfigError, match="tenants.globex: has the same API key as tenants.acme"):
        ServerConfig.from_keys({"acme": "sk-same", "globex": "sk-same"})


def test_a_model_failing_mid_request_is_reported_without_its_path(live_server, tmp_path):
    """A backend error (BonsaiError with a path in it) at request time: the client sees no path."""
    from bonsai_tenant._vendor.bonsai.errors import BonsaiError

    class Failing:
        def stream(self, messages, *, tools, max_tokens, temperature):
            raise BonsaiError(f"{SECRET}: tensor blk.0.attn_q.weight is truncated")

    port = live_server(create_app(ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}),
                                  lambda spec: Failing())).port
    for stream in (False, True):
        status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                                 body={"model": "m", "stream": stream, "messages": [{"role": "user", "content": "x"}]})
        assert status == 500 and "secret" not in raw.decode() and "blk.0" not in raw.decode()


def test_finish_only_backends_still_work(live_server):
    class Quiet:
        def stream(self, messages, *, tools, max_tokens, temperature):
            yield Finish("stop")

    port = live_server(create_app(ServerConfig.from_keys({"acme": "sk-a"}, {"m": ModelSpec("m")}),
                                  lambda spec: Quiet())).port
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a",
                             body={"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == ""
