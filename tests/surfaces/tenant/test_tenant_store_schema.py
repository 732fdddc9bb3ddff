"""The tenant database's schema at start-up (SQLite and PostgreSQL): created once, versioned, refused when
newer than the code; and a database that fails mid-request loses nothing silently."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest
from bonsai_tenant.db_config import DatabaseSpec
from bonsai_tenant.server import create_app
from bonsai_tenant.store import StoreError, open_store
from bonsai_tenant.store import migrate as migrate_module
from bonsai_tenant.tenants import ServerConfig
from fake_backend import make_backend
from http_client import request, sse_events
from sqlalchemy import create_engine, inspect, text


def tables_and_version(url: str) -> tuple[set[str], list[int]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            versions = [r[0] for r in conn.execute(text("SELECT version FROM bonsai_schema_version"))]
            return set(inspect(conn).get_table_names()), versions
    finally:
        engine.dispose()


def test_the_schema_is_created_once_and_its_version_recorded(database):
    open_store(database).close()
    tables, versions = tables_and_version(database.url)
    assert tables == {"bonsai_schema_version", "stored_completions", "completion_metadata", "usage", "quota_days"}
    assert versions == [migrate_module.VERSION] == [2]
    store = open_store(database)  # again: nothing to do, nothing lost
    store.record("acme", "m", 1, 2)
    store.close()
    store = open_store(database)
    assert migrate_module.migrate(store.db) == (2, 2)
    assert [(r.tenant, r.requests) for r in store.usage()] == [("acme", 1)]
    store.close()
    assert tables_and_version(database.url)[1] == [2]


def test_a_database_newer_than_the_code_is_refused_in_one_line(database):
    open_store(database).close()
    engine = create_engine(database.url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE bonsai_schema_version SET version = 7"))
    engine.dispose()
    with pytest.raises(StoreError) as info:
        open_store(database)
    assert str(info.value).endswith(": schema version 7 is newer than this bonsai-tenant knows (2); "
                                    "run the newer bonsai-tenant")
    assert "\n" not in str(info.value)


def test_a_failed_migration_step_leaves_the_schema_as_it_was(database, monkeypatch):
    def broken(conn):
        migrate_module.schema.completions.create(conn)
        raise StoreError("step failed half-way")

    monkeypatch.setattr(migrate_module, "STEPS", (broken,))
    with pytest.raises(StoreError):
        open_store(database)
    engine = create_engine(database.url)
    try:
        assert "stored_completions" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_sqlite_runs_in_wal_mode(tmp_path):
    spec = DatabaseSpec(f"sqlite:///{tmp_path / 'state.db'}")
    open_store(spec).close()
    assert sqlite3.connect(tmp_path / "state.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)


def writer_holding_a_new_file(path, seconds: float) -> threading.Timer:
    """A second connection holding a new (not yet WAL) file's write lock, as a server that is creating
    the schema does; it lets go after `seconds`. SQLite fails a journal-mode switch at once, without
    waiting, while another connection holds that lock: two servers starting together hit this."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other_process (x)")
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(seconds, lambda: (holder.execute("COMMIT"), holder.close()))
    release.start()
    return release


def test_a_server_starting_beside_one_creating_the_file_waits_for_its_lock(tmp_path):
    release = writer_holding_a_new_file(tmp_path / "state.db", seconds=0.3)
    try:
        open_store(DatabaseSpec(f"sqlite:///{tmp_path / 'state.db'}")).close()
    finally:
        release.join()
    assert sqlite3.connect(tmp_path / "state.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_lock_held_past_lock_timeout_is_one_line_naming_the_file(tmp_path):
    release = writer_holding_a_new_file(tmp_path / "state.db", seconds=1.0)
    try:
        with pytest.raises(StoreError) as info:
            open_store(DatabaseSpec(f"sqlite:///{tmp_path / 'state.db'}", lock_timeout=0.2))
    finally:
        release.join()
    assert str(info.value) == f"{tmp_path / 'state.db'}: database is locked"


def locked_requests(live_server, tmp_path, lock_at_start: bool = False) -> list[tuple[int, str]]:
    """Requests (plain and streamed, store=true) while another process holds the SQLite file's write
    lock, taken once the model starts (after the request's quota hold), or before the request
    (`lock_at_start`): (status, what the client was told) for each."""
    spec = DatabaseSpec(f"sqlite:///{tmp_path / 'state.db'}", lock_timeout=0.2)
    holders = []

    def lock() -> None:
        holders.append(sqlite3.connect(tmp_path / "state.db", isolation_level=None, check_same_thread=False))
        holders[-1].execute("BEGIN EXCLUSIVE")

    def locking_backend(spec):
        backend = make_backend(spec)
        plain = backend.stream

        def stream(*args, **kwargs):
            if not lock_at_start:
                lock()
            yield from plain(*args, **kwargs)

        backend.stream = stream
        return backend

    port = live_server(create_app(ServerConfig.from_keys({"acme": "sk-a"}, database=spec), locking_backend)).port
    body = {"model": "smollm2", "store": True, "messages": [{"role": "user", "content": "x"}]}
    if lock_at_start:
        lock()
    told = []
    try:
        for stream in (False, True):
            status, _, raw = request(port, "POST", "/v1/chat/completions", {**body, "stream": stream}, key="sk-a")
            last = sse_events(raw)[-2] if stream and status == 200 else json.loads(raw)
            told.append((status, json.dumps(last)))
            if not lock_at_start:
                holders.pop().close()
    finally:
        for holder in holders:
            holder.close()
    return told


def test_a_locked_database_is_an_error_to_the_client_never_a_lost_record(live_server, tmp_path):
    told = locked_requests(live_server, tmp_path)
    assert told[0][0] == 503 and '"code": "database_unavailable"' in told[0][1]
    assert told[1][0] == 200 and '"code": "database_unavailable"' in told[1][1]  # the stream's error event
    assert "was not recorded and is withheld" in told[0][1]
    store = open_store(DatabaseSpec(f"sqlite:///{tmp_path / 'state.db'}"))
    assert store.usage() == [] and store.count() == 0  # nothing half-written either
    store.close()


def test_a_database_locked_before_the_quota_hold_refuses_the_request_before_any_work(live_server, tmp_path):
    told = locked_requests(live_server, tmp_path, lock_at_start=True)
    assert [status for status, _ in told] == [503, 503]
    assert all('"code": "database_unavailable"' in what for _, what in told)


def test_the_lost_record_check_catches_a_server_that_replies_before_recording(live_server, tmp_path, monkeypatch):
    """Mutation: the server swallows the database's failure and replies as if all were kept."""
    import bonsai_tenant.billing as billing

    real = billing.call

    async def careless(fn, *args, **kwargs):
        try:
            return await real(fn, *args, **kwargs)
        except Exception:  # noqa: BLE001 - the bug under test
            return None

    monkeypatch.setattr(billing, "call", careless)
    told = locked_requests(live_server, tmp_path)
    assert told[0][0] == 200 and "database_unavailable" not in told[1][1]


def test_a_new_sqlite_database_and_its_wal_files_are_the_owners_only(tmp_path):
    import os
    import stat

    path = tmp_path / "tenants.db"
    old = os.umask(0o022)  # the usual umask, which leaves new files world-readable
    try:
        store = open_store(DatabaseSpec(f"sqlite:///{path}"))
        store.record("acme", "m", 1, 2)
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir() if p.name.startswith("tenants.db")}
        store.close()
    finally:
        os.umask(old)
    assert modes["tenants.db"] == 0o600 and set(modes.values()) == {0o600}, modes
    assert {"tenants.db-wal", "tenants.db-shm"} <= set(modes)
