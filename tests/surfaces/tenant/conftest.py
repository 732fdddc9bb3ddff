"""Tenant-surface fixtures: the hand-written package on sys.path, and a live server on a free port."""

from __future__ import annotations

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
