"""A SQLAlchemy engine for the tenant database (SQLite in WAL mode, or PostgreSQL via psycopg), and
its failures as one line that names the database."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, create_engine, make_url
from sqlalchemy.exc import DataError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from ..db_config import DatabaseSpec, shown
from ..errors import TenantError


class StoreError(TenantError):
    """The tenant database cannot be reached or used; the message is one line naming it."""


class StoreRefused(StoreError):
    """The database refused a value as data (a string it cannot hold, a number out of range): the
    request's fault, not the database's."""


def describe(spec: DatabaseSpec) -> str:
    """How messages name the database: the SQLite file, or the URL without its password."""
    url = make_url(spec.url)
    if url.drivername.startswith("sqlite"):
        return str(url.database) if url.database not in (None, "", ":memory:") else "the in-memory SQLite database"
    return shown(spec.url)


def one_line(exc: BaseException) -> str:
    """A driver's error as one line: its own text (psycopg's spans lines), no SQL, no parameters."""
    inner = getattr(exc, "orig", None) or exc
    text = " ".join(str(inner).split())
    return text or type(inner).__name__


def _switch_to_wal(cursor: Any, spec: DatabaseSpec) -> str:
    """Put the file in WAL mode; the journal mode SQLite reports. Switching needs the file's exclusive
    lock, and two connections switching a new file at once deadlock: SQLite then fails one at once
    ("database is locked") without waiting, so the switch is retried until lock_timeout."""
    deadline = time.monotonic() + spec.lock_timeout
    pause = 0.005
    while True:
        try:
            return str(cursor.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(2 * pause, 0.1)


def _private_file(path: str) -> None:
    """Create the database file readable by its owner only (0600) before SQLite opens it: it holds
    every tenant's prompts. SQLite gives its -wal and -shm files the database file's permissions."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    except OSError:
        pass  # SQLite's own open reports the problem, naming the file


def _sqlite_engine(spec: DatabaseSpec) -> Engine:
    memory = make_url(spec.url).database in (None, "", ":memory:")
    if not memory and not os.path.exists(str(make_url(spec.url).database)):
        _private_file(str(make_url(spec.url).database))
    options: dict[str, Any] = {"connect_args": {"timeout": spec.lock_timeout, "check_same_thread": False}}
    if memory:
        options["poolclass"] = StaticPool  # one connection: the database lives in it
    engine = create_engine(spec.url, **options)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below, not by the driver
        cursor = dbapi_connection.cursor()
        if not memory:
            # WAL: readers never wait for the writer; several processes share the file safely
            mode = _switch_to_wal(cursor, spec)
            if mode.lower() != "wal":
                raise StoreError(f"{describe(spec)}: SQLite could not switch to WAL mode (got {mode!r})")
            cursor.execute("PRAGMA synchronous=NORMAL")  # durable at each checkpoint, safe in WAL
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # a writer takes the file's write lock at BEGIN, so it waits (lock_timeout) instead of failing
        # when another process wrote since it began reading
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")

    return engine


def open_engine(spec: DatabaseSpec) -> Engine:
    """The engine for `spec` (nothing connects yet); a StoreError when its driver is missing."""
    try:
        if spec.is_sqlite:
            return _sqlite_engine(spec)
        return create_engine(spec.url, pool_pre_ping=True, pool_size=5, max_overflow=5,
                             connect_args={"connect_timeout": max(1, round(spec.lock_timeout))})
    except ModuleNotFoundError as exc:
        raise StoreError(f"{describe(spec)}: the {exc.name} driver is not installed; "
                         "pip install 'bonsai-tenant[postgres]'") from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"{describe(spec)}: {one_line(exc)}") from exc


class Database:
    """The engine and the way every query runs: in one transaction, failures as StoreError."""

    def __init__(self, spec: DatabaseSpec) -> None:
        self.spec = spec
        self.name = describe(spec)
        self.engine = open_engine(spec)
        # an in-memory SQLite database is one connection: its transactions must take turns
        self._turns = threading.RLock() if spec.is_sqlite and self.name.startswith("the in-memory") else None

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[Connection]:
        """One transaction (committed at the end, rolled back on any error); driver errors become a
        StoreError naming the database, so nothing is half-written and nothing fails silently."""
        try:
            if self._turns is not None:
                self._turns.acquire()
            try:
                with self.engine.connect().execution_options(write=write) as conn, conn.begin():
                    yield conn
            finally:
                if self._turns is not None:
                    self._turns.release()
        except DataError as exc:
            raise StoreRefused(f"{self.name}: {one_line(exc)}") from exc
        except SQLAlchemyError as exc:
            raise StoreError(f"{self.name}: {one_line(exc)}") from exc

    def close(self) -> None:
        self.engine.dispose()
