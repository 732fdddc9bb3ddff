"""A throwaway PostgreSQL server for the tenant database tests: initdb + pg_ctl in a temporary directory.

It listens on 127.0.0.1 and a free port with trust authentication, as an unprivileged user
(`postgres`, which Debian's package creates, when the tests run as root: PostgreSQL refuses root),
with fsync off (a test server: nothing here must survive a power cut). Each test gets a database
of its own, created on it. BONSAI_TEST_POSTGRES_URL points the tests at a server of yours instead.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER = "bonsai"  # the cluster's superuser


def binaries() -> Path | None:
    """The directory holding initdb and pg_ctl: Debian keeps them in /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """`start()` runs initdb and pg_ctl start; `url` is the admin URL (database `postgres`); `stop()`."""

    def __init__(self) -> None:
        self.bin = binaries()
        self.dir: Path | None = None
        self.port = _free_port()
        self.url = f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        command = [*argv]
        if os.geteuid() == 0:
            owner = "postgres" if _exists("postgres") else "nobody"
            command = ["runuser", "-u", owner, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    def start(self) -> PostgresServer:
        if self.bin is None:
            raise RuntimeError("initdb/pg_ctl not found: install PostgreSQL (apt-get install postgresql; "
                               "scripts/setup.sh does) or set BONSAI_TEST_POSTGRES_URL")
        self.dir = Path(tempfile.mkdtemp(prefix="bonsai-pg-"))
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres" if _exists("postgres") else "nobody")
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        data, log = self.dir / "data", self.dir / "server.log"
        for argv in ([str(self.bin / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8",
                      "--no-sync", "--locale=C"],
                     [str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "start", "-o",
                      f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off "
                      "-c synchronous_commit=off -c full_page_writes=off"]):
            done = self._run(*argv)
            if done.returncode != 0:
                detail = log.read_text() if log.exists() else ""
                raise RuntimeError(f"{argv[0]} failed ({done.returncode}):\n{done.stdout}{done.stderr}{detail}")
        return self

    def stop(self) -> None:
        if self.dir is not None and self.bin is not None:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def create_database(admin_url: str, name: str) -> str:
    """A new, empty database on the server at `admin_url`; its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)
