"""Two `bonsai-tenant serve` processes on one database (one SQLite file; one PostgreSQL database), as
behind a load balancer: what one stores the other lists and serves, usage adds up, a restart keeps both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from bonsai_tenant.cli import main
from http_client import request, sse_events
from test_tenant_wheel import free_port

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "surfaces" / "tenant" / "src"
KEYS = {"acme": "sk-acme-0123456789", "globex": "sk-globex-0123456789"}


def write_config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "tenants.toml"
    path.write_text('[tenants.acme]\napi-key-env = "ACME_KEY"\n[tenants.globex]\napi-key-env = "GLOBEX_KEY"\n'
                    f'[models.small]\n[database]\nurl = "{url}"\n')
    return path


class Server:
    """`python -m bonsai_tenant serve` on the scripted backend, in its own process."""

    def __init__(self, config: Path, name: str, *options: str) -> None:
        self.port = free_port()
        self.log_path = config.parent / f"{name}.log"
        env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}", "ACME_KEY": KEYS["acme"],
               "GLOBEX_KEY": KEYS["globex"]}
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bonsai_tenant", "serve", "--config", str(config), "--port", str(self.port),
                 "--log-level", "warning", "--backend-factory", "fake_backend:make_backend", *options],
                env=env, stdout=log, stderr=subprocess.STDOUT)

    def wait(self) -> Server:
        deadline = time.monotonic() + 60
        while True:
            try:
                if request(self.port, "GET", "/healthz", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start:\n{self.log_path.read_text()}")
            time.sleep(0.1)

    def __call__(self, method: str, path: str, body=None, key: str = KEYS["acme"]) -> tuple[int, dict | bytes]:
        status, _, raw = request(self.port, method, path, body, key=key)
        return status, (raw if body and body.get("stream") else json.loads(raw))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(15)


def usage_report(config: Path, capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["usage", "--config", str(config), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_servers_share_stored_completions_and_usage(database, tmp_path, capsys):
    config = write_config(tmp_path, database.url)
    one, two = Server(config, "one"), Server(config, "two")  # started together: they race to create the schema
    servers = [one.wait(), two.wait()]
    try:
        tokens = {"acme": 0, "globex": 0}
        status, stored = one("POST", "/v1/chat/completions", {"model": "small", "store": True,
                                                              "metadata": {"via": "one"},
                                                              "messages": [{"role": "user", "content": "kept"}]})
        assert status == 200
        tokens["acme"] += stored["usage"]["total_tokens"]
        status, listed = two("GET", "/v1/chat/completions?metadata[via]=one")
        assert status == 200 and [c["id"] for c in listed["data"]] == [stored["id"]]
        assert two("GET", f"/v1/chat/completions/{stored['id']}") == (200, {**stored, "metadata": {"via": "one"}})
        assert two("GET", f"/v1/chat/completions/{stored['id']}/messages")[1]["data"][0]["content"] == "kept"
        assert two("GET", f"/v1/chat/completions/{stored['id']}", key=KEYS["globex"])[0] == 404
        status, raw = two("POST", "/v1/chat/completions", {"model": "small", "store": True, "stream": True,
                                                           "stream_options": {"include_usage": True},
                                                           "messages": [{"role": "user", "content": "a b"}]},
                          key=KEYS["globex"])
        events = sse_events(raw)
        tokens["globex"] += events[-2]["usage"]["total_tokens"]
        assert one("GET", f"/v1/chat/completions/{events[0]['id']}", key=KEYS["globex"])[0] == 200
        for i in range(6):  # alternate servers and tenants
            tenant = "acme" if i % 3 else "globex"
            status, body = servers[i % 2]("POST", "/v1/chat/completions", {
                "model": "small", "messages": [{"role": "user", "content": "w " * i}]}, key=KEYS[tenant])
            tokens[tenant] += body["usage"]["total_tokens"]
        def burst(i: int) -> tuple[str, int]:  # both servers write usage rows at once
            tenant = "acme" if i % 2 else "globex"
            status, body = servers[i % 2]("POST", "/v1/chat/completions", {
                "model": "small", "store": i % 4 == 1, "messages": [{"role": "user", "content": "b " * i}]},
                key=KEYS[tenant])
            assert status == 200, body
            return tenant, body["usage"]["total_tokens"]

        with ThreadPoolExecutor(8) as pool:
            for tenant, used in pool.map(burst, range(16)):
                tokens[tenant] += used
        report = usage_report(config, capsys)
        assert {r["tenant"]: r["total_tokens"] for r in report["usage"]} == tokens
        assert report["total"]["total_tokens"] == sum(tokens.values()) and report["total"]["requests"] == 24
        assert usage_report(config, capsys, "--tenant", "globex")["total"]["requests"] == 11
    finally:
        for server in servers:
            server.stop()
    again = Server(config, "again").wait()  # a restart keeps both
    try:
        assert [c["id"] for c in again("GET", "/v1/chat/completions")[1]["data"]][0] == stored["id"]
        assert len(again("GET", "/v1/chat/completions")[1]["data"]) == 5  # and the burst's four
        assert again("GET", f"/v1/chat/completions/{events[0]['id']}", key=KEYS["globex"])[0] == 200
    finally:
        again.stop()
    assert usage_report(config, capsys)["total"]["total_tokens"] == sum(tokens.values())


def test_two_servers_at_once_never_pass_a_tenants_quota(database, tmp_path, capsys):
    """Concurrent requests on two server processes: each holds its prompt and max_tokens in the shared
    database before it runs, so together they stay within the quota, and what ran is what is counted."""
    config = write_config(tmp_path, database.url)
    config.write_text(config.read_text().replace('api-key-env = "ACME_KEY"\n',
                                                  'api-key-env = "ACME_KEY"\ndaily-token-quota = 400\n'))
    servers = [Server(config, "one"), Server(config, "two")]
    servers = [server.wait() for server in servers]
    try:
        ask = {"model": "small", "max_tokens": 100, "messages": [{"role": "user", "content": "w " * 120}]}
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda i: servers[i % 2]("POST", "/v1/chat/completions", ask), range(12)))
        done = [body for status, body in answers if status == 200]
        assert {status for status, _ in answers} == {200, 429}
        report = usage_report(config, capsys, "--tenant", "acme")["total"]
        assert report["requests"] == len(done) and report["total_tokens"] <= 400
        assert report["total_tokens"] == sum(body["usage"]["total_tokens"] for body in done)
    finally:
        for server in servers:
            server.stop()


@pytest.mark.parametrize("problem", ["corrupt", "locked"])
def test_a_corrupt_or_locked_sqlite_file_stops_the_start_with_one_line_naming_it(tmp_path, capsys, monkeypatch,
                                                                                  problem):
    import sqlite3

    db = tmp_path / "tenants.db"
    config = tmp_path / "tenants.toml"
    config.write_text('[tenants.acme]\napi-key-env = "ACME_KEY"\n[database]\nlock-timeout = 0.2\n')
    holder = None
    if problem == "corrupt":
        db.write_bytes(b"this is not a database, just bytes " * 200)
    else:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setenv("ACME_KEY", KEYS["acme"])
    try:
        code = main(["serve", "--config", str(config), "--backend-factory", "fake_backend:make_backend"])
    finally:
        if holder is not None:
            holder.close()
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    expected = "file is not a database" if problem == "corrupt" else "database is locked"
    assert err == f"bonsai-tenant: error: {db}: {expected}\n"


def test_an_unreachable_postgresql_is_one_line_without_the_password(tmp_path, capsys, monkeypatch):
    port = free_port()  # nothing listens there
    config = write_config(tmp_path, f"postgresql://bonsai:hunter2@127.0.0.1:{port}/tenants")
    monkeypatch.setenv("ACME_KEY", KEYS["acme"])
    monkeypatch.setenv("GLOBEX_KEY", KEYS["globex"])
    assert main(["serve", "--config", str(config), "--backend-factory", "fake_backend:make_backend"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hunter2" not in err and "Traceback" not in err
    assert err.startswith(f"bonsai-tenant: error: postgresql+psycopg://bonsai:***@127.0.0.1:{port}/tenants: ")
    assert "Connection refused" in err or "connection failed" in err
