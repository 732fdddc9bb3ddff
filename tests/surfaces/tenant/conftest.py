"""Tenant-surface fixtures: the hand-written package on sys.path, and a live server on a free port."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SRC = REPO / "surfaces" / "tenant" / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
BENCH = REPO / "bench"  # tenant_load_model: the byte tokenizer the scripted model shares with the load test
if str(BENCH) not in sys.path:
    sys.path.append(str(BENCH))


class LiveServer:
    """uvicorn serving an app in a thread on 127.0.0.1 and a port the OS picked."""

    def __init__(self, app) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def live_server():
    """Call with an ASGI app; yields the running LiveServer (stopped at teardown)."""
    servers: list[LiveServer] = []

    def start(app) -> LiveServer:
        server = LiveServer(app).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__()


OS_TESTS = HERE.parent / "os"  # surface_repo.py: the synced scenario repository both surfaces build from
if str(OS_TESTS) not in sys.path:
    sys.path.insert(0, str(OS_TESTS))


@pytest.fixture(scope="session")
def tenant_repo(tmp_path_factory):
    from surface_repo import make_repo

    return make_repo(tmp_path_factory.mktemp("tenant-repo"))


@pytest.fixture(scope="session")
def tenant_wheel(tenant_repo, tmp_path_factory):
    from surface_repo import config

    from bonsai_sync.bundle import build_surface

    return build_surface(config(tenant_repo), "tenant", tmp_path_factory.mktemp("dist-1"))


@pytest.fixture(scope="session")
def tenant_venv(tenant_wheel, tmp_path_factory):
    """A fresh venv with the wheel installed by pip. Its dependencies are not downloaded: a .pth
    line points at this environment's site-packages (a plain path entry, so the editable `bonsai`
    finder there stays off and `bonsai` can only come from the wheel)."""
    import subprocess
    import sysconfig

    home = tmp_path_factory.mktemp("tenant-venv")
    venv = home / "venv"
    subprocess.run([str(Path(sys.base_prefix) / "bin" / "python3"), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "_bonsai_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--no-index", "--disable-pip-version-check", "-q", str(tenant_wheel)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A tiny random qwen3 GGUF (ChatML specials, 8,192 positions): a real model the GPU runs quickly."""
    from tests.helpers.synthetic import write_tiny_gguf

    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf", context_length=8192)


@pytest.fixture(scope="session")
def tiny_backend(gpu, tiny_model):
    """The tenant's RuntimeBackend on the tiny model and the GPU (lavapipe here and in CI)."""
    from bonsai_tenant.runtime_backend import RuntimeBackend

    return RuntimeBackend.open(tiny_model, max_positions=1024)


def _in_ci() -> bool:
    import os

    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def postgres_admin_url():
    """A real PostgreSQL server's admin URL: BONSAI_TEST_POSTGRES_URL, or a throwaway one started now
    (initdb + pg_ctl in a temporary directory). Without PostgreSQL the test fails under CI=true (CI
    installs it) and skips elsewhere, saying how to get it."""
    import os

    from postgres_server import PostgresServer

    given = os.environ.get("BONSAI_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    try:
        server = PostgresServer().start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        if _in_ci():
            pytest.fail(f"CI=true but no PostgreSQL server could be started: {exc}")
        pytest.skip(f"no PostgreSQL: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """A fresh, empty tenant database (a DatabaseSpec): a SQLite file in tmp_path, or a new database
    on the test PostgreSQL server. Tests that take it run against both backends."""
    import secrets

    from bonsai_tenant.db_config import DatabaseSpec

    if request.param == "sqlite":
        return DatabaseSpec(f"sqlite+pysqlite:///{tmp_path / 'tenants.db'}")
    from postgres_server import create_database

    admin = request.getfixturevalue("postgres_admin_url")
    return DatabaseSpec(create_database(admin, f"bonsai_test_{secrets.token_hex(6)}"))
