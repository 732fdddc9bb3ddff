"""The tenant server on the real default model (slow on lavapipe: run with -m slow)."""

from __future__ import annotations

import json

import pytest
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import Limits, ModelSpec, ServerConfig

openai = pytest.importorskip("openai")
# the runtime's own calculator spec: the pattern keeps a small model from writing prose in the string
EXPRESSION = {"type": "string", "pattern": r"^[0-9+\-*/%(). eE]+$"}
CALCULATOR = {"type": "function", "function": {"name": "calculator", "description": "Evaluate arithmetic",
                                               "parameters": {"type": "object", "properties": {"expression": EXPRESSION},
                                                              "required": ["expression"]}}}


@pytest.fixture(scope="module")
def client(gpu, tmp_path_factory):
    import threading
    import time

    import uvicorn
    from bonsai_tenant.server import default_backend_factory

    config = ServerConfig.from_keys({"acme": "sk-a"}, {"smollm2": ModelSpec("smollm2", max_positions=1024)},
                                    Limits(request_timeout=3600))  # lavapipe on a busy machine: minutes per prefill
    app = create_app(config, default_backend_factory)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-a", max_retries=0, timeout=1800)
    server.should_exit = True


@pytest.mark.slow
@pytest.mark.timeout(3600)  # two prefills of ~330 tokens: minutes each on a busy lavapipe
def test_required_gets_a_valid_call_and_a_tool_result_gets_an_answer(client):
    ask = [{"role": "user", "content": "What is 17 * 23?"}]
    reply = client.chat.completions.create(model="smollm2", messages=ask, tools=[CALCULATOR], tool_choice="required",
                                           max_tokens=64)
    assert reply.choices[0].message.tool_calls, (reply.choices[0].finish_reason, reply.choices[0].message.content)
    call = reply.choices[0].message.tool_calls[0]
    assert call.function.name == "calculator" and isinstance(json.loads(call.function.arguments)["expression"], str)
    messages = [*ask, {"role": "assistant", "content": None, "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": "calculator",
                                                         "arguments": '{"expression": "17 * 23"}'}}]},
                {"role": "tool", "tool_call_id": call.id, "content": "391"}]
    answer = client.chat.completions.create(model="smollm2", messages=messages, tools=[CALCULATOR], max_tokens=12)
    text = answer.choices[0].message.content or ""
    assert "<tool_response>" not in text and "391" in text
