"""The tenant wheel as products use it: installed into a fresh venv, served on 127.0.0.1, called over HTTP."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
from http_client import request, sse_events
from surface_repo import config

from bonsai.models import cache_dir
from bonsai_sync.bundle import build_surface

KEY = "sk-acme-test-0123456789"
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}}}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`bonsai-tenant serve` from the venv, in its own process, on a free port."""

    def __init__(self, venv: Path, workdir: Path, *extra: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "tenants.toml").write_text('[tenants.acme]\napi-key-env = "ACME_KEY"\n[models.smollm2]\n')
        plugins = workdir / "plugins"
        plugins.mkdir(exist_ok=True)
        shutil.copyfile(Path(__file__).with_name("fake_backend.py"), plugins / "fake_backend.py")
        self.port = free_port()
        # HOME is the workdir, so the model cache is named: the one `bonsai models pull` filled here
        env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "ACME_KEY": KEY, "PYTHONPATH": str(plugins),
               "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "BONSAI_MODELS_DIR": str(cache_dir())}
        self.log = (workdir / "server.log").open("w")
        self.process = subprocess.Popen(
            [str(venv / "bin" / "bonsai-tenant"), "serve", "--config", "tenants.toml", "--port", str(self.port),
             "--log-level", "warning", *extra], cwd=workdir, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                if request(self.port, "GET", "/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server did not start:\n" + (workdir / "server.log").read_text())
            time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


@pytest.fixture
def served(tenant_venv, tmp_path):
    server = Served(tenant_venv, tmp_path, "--backend-factory", "fake_backend:make_backend")
    yield server
    server.stop()


def test_the_wheel_holds_the_app_and_the_synced_copy_only(tenant_wheel):
    names = zipfile.ZipFile(tenant_wheel).namelist()
    assert "bonsai_tenant/server.py" in names and "bonsai_tenant/_vendor/bonsai/engine/engine.py" in names
    assert any(n.startswith("bonsai_tenant/_vendor/bonsai/kv/") and n.endswith(".wgsl") for n in names)
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", "bonsai-sync.lock"))]
    assert not [n for n in names if n.startswith(("bonsai_tenant/_vendor/bonsai/cli/", "tests/", "bonsai_sync/"))]


def test_the_wheel_installs_nothing_outside_its_own_package(tenant_wheel):
    """A top-level `bonsai/` would overlap the `bonsai` distribution: uninstalling one breaks the other."""
    wheel = zipfile.ZipFile(tenant_wheel)
    tops = {n.split("/")[0] for n in wheel.namelist()}
    assert tops == {"bonsai_tenant", "bonsai_tenant-0.1.0.dist-info"}
    record = wheel.read("bonsai_tenant-0.1.0.dist-info/RECORD").decode()
    assert not [line for line in record.splitlines() if line.startswith("bonsai/")]
    metadata = zipfile.ZipFile(tenant_wheel).read("bonsai_tenant-0.1.0.dist-info/METADATA").decode()
    for requirement in ("starlette", "uvicorn", "numpy", "wgpu", "sqlalchemy"):
        assert f"Requires-Dist: {requirement}" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert not [r for r in requires if "llm" in r or "llama" in r]  # the model: `bonsai-tenant pull-model`


def test_building_twice_gives_identical_bytes(tenant_repo, tenant_wheel, tmp_path):
    again = build_surface(config(tenant_repo), "tenant", tmp_path)
    assert again.name == tenant_wheel.name and again.read_bytes() == tenant_wheel.read_bytes()


def test_the_installed_package_imports_from_the_venv_not_the_repo(tenant_venv):
    probe = ("import importlib.util, bonsai_tenant, bonsai_tenant._vendor.bonsai.engine as engine\n"
             "print(bonsai_tenant.__file__); print(engine.__file__)\n"
             "print(importlib.util.find_spec('bonsai'))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(tenant_venv / "bin" / "python"), "-c", probe], capture_output=True, text=True,
                          cwd="/", env=env)
    assert done.returncode == 0, done.stderr
    *paths, top_level_bonsai = done.stdout.split("\n")[:3]
    assert all(p.startswith(str(tenant_venv)) for p in paths), paths
    assert top_level_bonsai == "None"  # the wheel installs no `bonsai` of its own


def test_a_streamed_reply_over_http(served):
    status, headers, raw = request(served.port, "POST", "/v1/chat/completions", key=KEY, body={
        "model": "smollm2", "stream": True, "messages": [{"role": "user", "content": "hello wheel"}]})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1])
    assert text == "echo: hello wheel"


def test_the_installed_server_keeps_stored_completions_in_a_sqlite_file_next_to_its_config(served, tmp_path):
    status, _, raw = request(served.port, "POST", "/v1/chat/completions", key=KEY, body={
        "model": "smollm2", "store": True, "messages": [{"role": "user", "content": "keep me"}]})
    stored = json.loads(raw)["id"]
    status, _, raw = request(served.port, "GET", "/v1/chat/completions", key=KEY)
    assert status == 200 and [c["id"] for c in json.loads(raw)["data"]] == [stored]
    assert (tmp_path / "tenants.db").is_file() and (tmp_path / "tenants.db-wal").is_file()


def test_a_tool_call_over_http(served):
    status, _, raw = request(served.port, "POST", "/v1/chat/completions", key=KEY, body={
        "model": "smollm2", "tools": [WEATHER], "messages": [{"role": "user", "content": "weather in Paris?"}]})
    choice = json.loads(raw)["choices"][0]
    assert status == 200 and choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"] == {"name": "get_weather",
                                                              "arguments": json.dumps({"city": "Paris"})}


def test_wrong_key_401_and_malformed_json_400(served):
    status, _, raw = request(served.port, "POST", "/v1/chat/completions", key="sk-wrong",
                             body={"model": "smollm2", "messages": [{"role": "user", "content": "x"}]})
    assert status == 401 and json.loads(raw)["error"]["code"] == "invalid_api_key"
    status, _, raw = request(served.port, "POST", "/v1/chat/completions", key=KEY, body=b"{not json")
    assert status == 400 and "request body is not valid JSON" in json.loads(raw)["error"]["message"]


def test_the_official_openai_client_streams_and_gets_tool_calls(served):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{served.port}/v1", api_key=KEY, max_retries=0)
    stream = client.chat.completions.create(model="smollm2", stream=True,
                                            messages=[{"role": "user", "content": "hi there"}])
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "echo: hi there"
    reply = client.chat.completions.create(model="smollm2", tools=[WEATHER],
                                           messages=[{"role": "user", "content": "weather?"}])
    call = reply.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == ("call_0", "get_weather",
                                                                                  {"city": "Paris"})
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=client.base_url, api_key="sk-wrong", max_retries=0).models.list()


@pytest.mark.slow
def test_a_streamed_reply_from_the_default_model(tenant_venv, tmp_path):
    server = Served(tenant_venv, tmp_path)
    try:
        status, _, raw = request(server.port, "POST", "/v1/chat/completions", key=KEY, timeout=600, body={
            "model": "smollm2", "stream": True, "max_tokens": 6,
            "messages": [{"role": "user", "content": "What is the capital of France?"}]})
    finally:
        server.stop()
    events = sse_events(raw)
    assert status == 200 and events[-1] == "[DONE]", raw[-500:]
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1] if e.get("choices"))
    assert "Paris" in text


def test_the_identical_bytes_check_would_catch_a_build_date_that_leaks_in(tenant_repo, tenant_wheel, tmp_path,
                                                                          monkeypatch):
    """Mutation: move the fixed build date; the same comparison must now see different bytes."""
    import bonsai_sync.bundle.stage as build

    monkeypatch.setattr(build, "SOURCE_DATE_EPOCH", build.SOURCE_DATE_EPOCH + 86400 * 366)  # 1980 is a leap year
    mutated = build_surface(config(tenant_repo), "tenant", tmp_path)
    assert mutated.read_bytes() != tenant_wheel.read_bytes()
    dates = {i.date_time[:3] for i in zipfile.ZipFile(mutated).infolist()}
    assert dates == {(1981, 1, 1)}


@pytest.mark.parametrize("dropped, imported", [('    "jinja2>=3.1.6",\n', "jinja2"), ('    "starlette>=1.0",\n', "starlette")])
def test_a_dependency_the_surface_imports_but_does_not_declare_stops_the_build(tenant_repo, tmp_path, dropped,
                                                                               imported):
    """Mutation: drop one declared requirement (runtime's jinja2, the app's starlette); the build names it."""
    from bonsai_sync.bundle import BuildError

    repo = tmp_path / "repo"
    shutil.copytree(tenant_repo, repo)
    pyproject = repo / "surfaces" / "tenant" / "pyproject.toml"
    text = pyproject.read_text()
    assert dropped in text
    pyproject.write_text(text.replace(dropped, ""))
    with pytest.raises(BuildError) as info:
        build_surface(config(repo), "tenant", tmp_path / "dist")
    assert str(info.value).startswith(f"{pyproject}: the surface imports {imported}, which no declared distribution")


def bonsai_sync(repo: Path, *args: str) -> subprocess.CompletedProcess:
    import sys

    return subprocess.run([sys.executable, "-m", "bonsai_sync", "--root", str(repo), *args], capture_output=True,
                          text=True)


def test_the_build_command_syncs_an_upstream_change_then_prints_where_the_wheel_went(tenant_repo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(tenant_repo, repo)
    source = repo / "runtime" / "bonsai" / "errors.py"
    source.write_text(source.read_text() + "# changed upstream\n")
    done = bonsai_sync(repo, "build", "--surface", "tenant")
    assert done.returncode == 0, done.stderr
    wheel = repo / "dist" / "bonsai_tenant-0.1.0-py3-none-any.whl"
    assert f"tenant: dist/{wheel.name}  " in done.stdout and f"({wheel.stat().st_size} bytes)" in done.stdout
    assert "# changed upstream" in zipfile.ZipFile(wheel).read("bonsai_tenant/_vendor/bonsai/errors.py").decode()


def test_the_build_command_refuses_a_hand_edited_copy_naming_the_file(tenant_repo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(tenant_repo, repo)
    edited = repo / "surfaces" / "tenant" / "src" / "bonsai_tenant" / "_vendor" / "bonsai" / "errors.py"
    edited.write_text(edited.read_text() + "# patched by hand\n")
    done = bonsai_sync(repo, "build", "--surface", "tenant")
    assert done.returncode == 1
    assert "surfaces/tenant/src/bonsai_tenant/_vendor/bonsai/errors.py: edited by hand" in done.stderr
    assert "# patched by hand" in edited.read_text()  # the edit is not silently overwritten
    assert not (repo / "dist").exists()
