"""API keys: several per tenant (hashes and environment variables together), a minimum length, and
rotation without downtime: the tenants file reloads on SIGHUP and when it changes, dropping no request
(the README's rotate-key recipe, run end to end against `bonsai-tenant serve`, on SQLite and PostgreSQL)."""

from __future__ import annotations

import io
import json
import logging
import signal
import threading
from pathlib import Path

import pytest
from bonsai_tenant.cli import main
from bonsai_tenant.errors import ApiError, ConfigError
from bonsai_tenant.server import create_app
from bonsai_tenant.tenants import key_digest, load_config
from fake_backend import make_backend
from http_client import request
from test_tenant_scale_out import Server
from test_tenant_work import wait_until

OLD, NEW, ENV_KEY, NEXT_KEY = ("sk-old-0123456789abcdef", "sk-new-0123456789abcdef", "sk-env-0123456789abcdef",
                               "sk-next-0123456789abcdef")


def tenants_file(path: Path, url: str, *digests: str, extra: str = "") -> Path:
    hashes = ", ".join(f'"{d}"' for d in digests)
    path.write_text(f'[tenants.acme]\napi-key-sha256 = [{hashes}]\n{extra}[models.small]\n'
                    f'[database]\nurl = "{url}"\n')
    return path


def authenticates(config, key: str) -> bool:
    try:
        return config.authenticate(f"Bearer {key}").name == "acme"
    except ApiError:
        return False


def test_every_listed_hash_and_environment_key_authenticates(tmp_path):
    path = tenants_file(tmp_path / "tenants.toml", "sqlite:///x.db", key_digest(OLD), key_digest(NEW),
                        extra='api-key-env = ["ACME_KEY", "ACME_KEY_NEXT"]\n')
    config = load_config(path, environ={"ACME_KEY": ENV_KEY, "ACME_KEY_NEXT": NEXT_KEY})
    assert all(authenticates(config, k) for k in (OLD, NEW, ENV_KEY, NEXT_KEY))
    assert not authenticates(config, "sk-other-0123456789abcdef")
    single = tenants_file(tmp_path / "one.toml", "sqlite:///x.db", key_digest(OLD), extra='api-key-env = "ACME_KEY"\n')
    both = load_config(single, environ={"ACME_KEY": ENV_KEY})
    assert authenticates(both, OLD) and authenticates(both, ENV_KEY)  # neither way of giving a key is ignored


@pytest.mark.parametrize("text, message", [
    ('api-key-env = "K"\n', "tenants.acme.api-key-env: the key in K has 5 characters; a key needs at least 16"),
    ('api-key-env = ["K", 3]\n', "tenants.acme.api-key-env: must be an environment variable name, or a list of them"),
    (f'api-key-sha256 = ["{key_digest(OLD)}", "{key_digest(OLD)}"]\n', "tenants.acme: has the same API key as itself"),
    (f'api-key-sha256 = ["{key_digest(OLD)}", "nope"]\n', "tenants.acme.api-key-sha256: 'nope' is not 64 lowercase"),
])
def test_bad_keys_stop_the_load_naming_the_key(tmp_path, text, message):
    path = tmp_path / "tenants.toml"
    path.write_text(f"[tenants.acme]\n{text}")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={"K": "short"})
    assert message in str(info.value)


def test_new_key_makes_a_long_key_and_hash_key_refuses_a_short_one(monkeypatch, capsys):
    assert main(["new-key"]) == 0
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    key, digest = lines["key"].strip(), lines["api-key-sha256"].strip()
    assert len(key) >= 40 and digest == key_digest(key)
    monkeypatch.setattr("sys.stdin", io.StringIO("short-key\n"))
    assert main(["hash-key"]) == 2
    assert "a key needs at least 16" in capsys.readouterr().err


def test_a_changed_file_reloads_without_dropping_requests_and_a_bad_one_is_kept_out(
        live_server, database, tmp_path, caplog):
    path = tenants_file(tmp_path / "tenants.toml", database.url, key_digest(OLD))
    app = create_app(load_config(path), make_backend, config_path=path, watch_interval=0.05)
    port = live_server(app).port
    ask = {"model": "small", "messages": [{"role": "user", "content": "hi"}]}
    statuses: list[int] = []
    stop = threading.Event()

    def traffic() -> None:  # the tenant keeps calling with its old key throughout the first reload
        while not stop.is_set():
            statuses.append(request(port, "POST", "/v1/chat/completions", ask, key=OLD)[0])

    worker = threading.Thread(target=traffic)
    worker.start()
    try:
        assert wait_until(lambda: len(statuses) >= 3, 30)  # requests before the reload ...
        tenants_file(path, database.url, key_digest(OLD), key_digest(NEW))
        assert wait_until(lambda: request(port, "GET", "/v1/models", key=NEW)[0] == 200)
        reloaded = len(statuses)
        assert wait_until(lambda: len(statuses) >= reloaded + 3, 30)  # ... and after it
    finally:
        stop.set()
        worker.join(30)
    assert len(statuses) > 3 and set(statuses) == {200}
    with caplog.at_level(logging.ERROR, logger="bonsai_tenant"):
        path.write_text("[tenants\n")  # broken: refused, the running keys kept
        assert wait_until(lambda: "not valid TOML" in caplog.text)
        tenants_file(path, database.url, key_digest(NEW), extra="").write_text(
            path.read_text().replace("[models.small]\n", "[models.other]\n"))  # a model change needs a restart
        assert wait_until(lambda: "models changed, which only a restart applies" in caplog.text)
    assert request(port, "GET", "/v1/models", key=OLD)[0] == 200
    tenants_file(path, database.url, key_digest(NEW))
    assert wait_until(lambda: request(port, "GET", "/v1/models", key=OLD)[0] == 401)
    assert request(port, "POST", "/v1/chat/completions", ask, key=NEW)[0] == 200


def test_the_rotate_key_recipe_end_to_end_with_sighup(database, tmp_path, capsys):
    """The README's recipe against `bonsai-tenant serve` (file watching off: SIGHUP alone reloads)."""
    assert main(["new-key"]) == 0
    first = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    old_key, old_hash = first["key"].strip(), first["api-key-sha256"].strip()
    path = tenants_file(tmp_path / "tenants.toml", database.url, old_hash)
    server = Server(path, "rotate", "--watch-interval", "0").wait()
    try:
        ask = {"model": "small", "messages": [{"role": "user", "content": "hi"}]}
        assert server("POST", "/v1/chat/completions", ask, key=old_key)[0] == 200
        assert main(["new-key"]) == 0  # 1. a new key and its hash
        second = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
        new_key, new_hash = second["key"].strip(), second["api-key-sha256"].strip()
        tenants_file(path, database.url, old_hash, new_hash)  # 2. its hash beside the old one
        assert server("GET", "/v1/models", key=new_key)[0] == 401  # nothing changes before the reload
        server.process.send_signal(signal.SIGHUP)  # 3. reload
        assert wait_until(lambda: server("GET", "/v1/models", key=new_key)[0] == 200)
        assert server("POST", "/v1/chat/completions", ask, key=old_key)[0] == 200  # both work meanwhile
        tenants_file(path, database.url, new_hash)  # 4. the old hash removed, reloaded
        server.process.send_signal(signal.SIGHUP)
        assert wait_until(lambda: server("GET", "/v1/models", key=old_key)[0] == 401)
        status, body = server("POST", "/v1/chat/completions", ask, key=new_key)
        assert status == 200 and json.dumps(body).count("echo: hi") == 1
        assert server.process.poll() is None
    finally:
        server.stop()
