"""The official `openai` client against the server: plain, streaming, two tenants, hanging up early."""

from __future__ import annotations

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import ModelSpec, ServerConfig
from scripted_model import scripted_backend

openai = pytest.importorskip("openai")
KEYS = {"acme": "sk-acme", "globex": "sk-globex"}
MODELS = {"shared": ModelSpec("shared"), "acme/only": ModelSpec("acme/only", tenants=frozenset({"acme"}))}


@pytest.fixture
def setup(live_server):
    backend, model, _ = scripted_backend("Hello from the model. " * 40, delay=0.005)
    port = live_server(create_app(ServerConfig.from_keys(KEYS, MODELS), lambda spec: backend)).port

    def client(key: str, **kw):
        return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0, **kw)

    return client, model


def test_plain_and_streamed_replies(setup):
    client, _ = setup
    acme = client("sk-acme")
    reply = acme.chat.completions.create(model="shared", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "Hello" and reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 5
    stream = acme.chat.completions.create(model="shared", max_tokens=11, stream=True,
                                          stream_options={"include_usage": True},
                                          messages=[{"role": "user", "content": "hi"}])
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello from "
    assert chunks[-1].usage.completion_tokens == 11


def test_two_tenants_see_their_own_models_and_completions(setup):
    client, _ = setup
    acme, globex = client("sk-acme"), client("sk-globex")
    assert [m.id for m in acme.models.list()] == ["shared", "acme/only"]
    assert [m.id for m in globex.models.list()] == ["shared"]
    assert acme.chat.completions.create(model="acme/only", max_tokens=1,
                                        messages=[{"role": "user", "content": "x"}]).choices[0].message.content == "H"
    with pytest.raises(openai.NotFoundError):
        globex.chat.completions.create(model="acme/only", max_tokens=1, messages=[{"role": "user", "content": "x"}])
    stored = acme.chat.completions.create(model="shared", max_tokens=1, store=True,
                                          messages=[{"role": "user", "content": "x"}])
    assert acme.chat.completions.retrieve(stored.id).id == stored.id
    assert [c.id for c in acme.chat.completions.list()] == [stored.id]
    assert [m.content for m in acme.chat.completions.messages.list(stored.id)] == ["x"]
    assert acme.chat.completions.update(stored.id, metadata={"k": "v"}).id == stored.id
    assert [c.id for c in acme.chat.completions.list(metadata={"k": "v"})] == [stored.id]
    with pytest.raises(openai.NotFoundError):  # another tenant's id is answered as a missing one
        globex.chat.completions.retrieve(stored.id)
    assert list(globex.chat.completions.list()) == []
    with pytest.raises(openai.NotFoundError):
        globex.chat.completions.delete(stored.id)
    assert acme.chat.completions.delete(stored.id).deleted is True
    with pytest.raises(openai.AuthenticationError):
        client("sk-nobody").models.list()


def test_closing_a_stream_early_stops_the_model(setup):
    client, model = setup
    stream = client("sk-acme").chat.completions.create(model="shared", max_tokens=800, stream=True,
                                                       messages=[{"role": "user", "content": "long"}])
    next(iter(stream))
    stream.close()
    assert model.stopped.wait(5) and model.steps < 800


def test_a_client_timeout_stops_the_model(setup):
    client, model = setup
    impatient = client("sk-acme", timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        impatient.chat.completions.create(model="shared", max_tokens=800, messages=[{"role": "user", "content": "x"}])
    assert model.stopped.wait(5) and model.steps < 800
    again = client("sk-globex").chat.completions.create(model="shared", max_tokens=2,
                                                        messages=[{"role": "user", "content": "x"}])
    assert again.choices[0].message.content == "He"
