"""Issue 21.2 and 21.8: bounded bodies and prompts, and each model's context as a setting."""

from __future__ import annotations

import http.client
import json

import pytest
from bonsai_tenant.errors import ConfigError, InvalidRequest
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import Limits, ModelSpec, ServerConfig, load_config
from fake_backend import make_backend
from http_client import request
from scripted_model import scripted_backend

KEYS = {"acme": "sk-a"}
MODELS = {"smollm2": ModelSpec("smollm2")}


def serve(live_server, factory=make_backend, **limits) -> int:
    return live_server(create_app(ServerConfig.from_keys(KEYS, MODELS, Limits(**limits)), factory)).port


def body_of(size: int) -> bytes:
    head = b'{"model": "smollm2", "messages": [{"role": "user", "content": "'
    tail = b'"}]}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def test_a_body_over_the_limit_is_413_json_before_it_is_read(live_server):
    port = serve(live_server, max_body_bytes=4096)
    assert request(port, "POST", "/v1/chat/completions", body_of(4096), key="sk-a")[0] == 200
    status, headers, raw = request(port, "POST", "/v1/chat/completions", body_of(4097), key="sk-a")
    assert status == 413 and headers["content-type"] == "application/json"
    assert json.loads(raw)["error"] == {"message": "request body is larger than this server's limit of 4096 bytes",
                                        "type": "invalid_request_error", "param": None, "code": "request_too_large"}


def test_a_chunked_body_is_cut_off_at_the_limit_too(live_server):
    port = serve(live_server, max_body_bytes=4096)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    chunks = (body_of(100_000)[i:i + 1000] for i in range(0, 100_000, 1000))
    conn.request("POST", "/v1/chat/completions", body=chunks, encode_chunked=True,
                 headers={"Authorization": "Bearer sk-a", "Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 413 and json.loads(response.read())["error"]["code"] == "request_too_large"


def test_the_default_limit_is_one_megabyte(live_server):
    port = serve(live_server)
    assert request(port, "POST", "/v1/chat/completions", body_of(1 << 20), key="sk-a")[0] == 200
    assert request(port, "POST", "/v1/chat/completions", body_of((1 << 20) + 1), key="sk-a")[0] == 413


def test_a_prompt_that_cannot_fit_is_refused_without_tokenizing_it():
    """900 KB of text needs more than 4,096 positions by its bytes alone: no tokenizer call at all."""
    backend, model, tokenizer = scripted_backend("ok", max_positions=4096)
    with pytest.raises(InvalidRequest, match=r"needs at least \d+ tokens, more than the 4088 positions"):
        backend.stream([{"role": "user", "content": "x" * 900_000}], tools=[], max_tokens=8, temperature=0.0)
    assert tokenizer.encoded == [] and model.prompts == []


def test_a_prompt_just_over_the_context_is_refused_as_soon_as_it_is_counted():
    backend, model, tokenizer = scripted_backend("ok", max_positions=64)
    with pytest.raises(InvalidRequest, match="longer than the 56 positions"):
        backend.stream([{"role": "user", "content": "x" * 60}], tools=[], max_tokens=8, temperature=0.0)
    assert model.prompts == []


def test_max_tokens_beyond_the_context_is_a_400_naming_it(live_server):
    backend, _, _ = scripted_backend("ok", max_positions=64)
    port = serve(live_server, factory=lambda spec: backend)
    status, _, raw = request(port, "POST", "/v1/chat/completions", key="sk-a", body={
        "model": "smollm2", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]})
    assert status == 400 and "max_tokens: 64 leaves no room for the prompt" in json.loads(raw)["error"]["message"]


def test_the_context_is_the_models_own_by_default_and_a_per_model_setting(gpu, tiny_model):
    """The tiny model has 8,192 positions: no fixed 2,048 cap; `max-positions` lowers it per model."""
    from bonsai_tenant.runtime_backend import RuntimeBackend

    assert RuntimeBackend.open(tiny_model).parts.max_positions == 8192
    assert RuntimeBackend.open(tiny_model, max_positions=1024).parts.max_positions == 1024
    with pytest.raises(Exception, match="max-positions 9000 is more than the model's context of 8192"):
        RuntimeBackend.open(tiny_model, max_positions=9000)


def test_the_tenants_file_sets_limits_and_each_models_context(tmp_path):
    path = tmp_path / "tenants.toml"
    path.write_text('[server]\nmax-body-bytes = 2048\nqueue-size = 3\nrequest-timeout = 9.5\n'
                    '[tenants.acme]\napi-key-env = "K"\n[models.big]\nmax-positions = 8192\n[models.small]\n')
    config = load_config(path, environ={"K": "sk-a-long-enough-key"})
    assert config.limits == Limits(max_body_bytes=2048, queue_size=3, request_timeout=9.5)
    assert (config.models["big"].max_positions, config.models["small"].max_positions) == (8192, None)


@pytest.mark.parametrize("text, message", [
    ("[server]\nmax-body-bytes = 0\n", "server.max-body-bytes: must be a positive integer"),
    ("[server]\nqueue = 3\n", "server.queue: unknown key"),
    ("[server]\nrequest-timeout = 'soon'\n", "server.request-timeout: must be a positive number of seconds"),
    ("[models.m]\nmax-positions = -1\n", "models.m.max-positions: must be a positive integer"),
])
def test_bad_limits_are_config_errors_naming_the_key(tmp_path, text, message):
    path = tmp_path / "tenants.toml"
    path.write_text('[tenants.acme]\napi-key-env = "K"\n' + text)
    with pytest.raises(ConfigError, match=message):
        load_config(path, environ={"K": "sk-a-long-enough-key"})
