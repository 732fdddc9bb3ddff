"""The schema's versions: each step applied once, in order, by whichever server starts first.

Steps run in one transaction that holds the database's lock (SQLite: BEGIN IMMEDIATE; PostgreSQL:
an advisory lock), so two servers starting together never both migrate, and a failed step leaves
the schema as it was. `bonsai_schema_version` holds the last step applied. A new step is appended
to STEPS as explicit DDL for that change (never edited once released).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select, text
from sqlalchemy.engine import Connection

from . import schema
from .engine import Database, StoreError

_LOCK = 0x626F6E736169  # "bonsai": the PostgreSQL advisory lock the migrating server holds


def _v1(conn: Connection) -> None:
    """Stored completions, their metadata pairs, usage per tenant, model and day."""
    for table in (schema.completions, schema.completion_metadata, schema.usage):
        table.create(conn)


def _v2(conn: Connection) -> None:
    """Tokens charged per tenant and day: usage plus what running requests hold (quota reservations)."""
    schema.quota_days.create(conn)


STEPS: tuple[Callable[[Connection], None], ...] = (_v1, _v2)
VERSION = len(STEPS)


def migrate(db: Database) -> tuple[int, int]:
    """Bring the schema to VERSION: (version found, version now). A StoreError when the database is
    newer than this code (a later bonsai-tenant migrated it)."""
    with db.transaction(write=True) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK})
        schema.schema_version.create(conn, checkfirst=True)
        found = conn.execute(select(schema.schema_version.c.version)).scalar()
        if found is None:
            conn.execute(schema.schema_version.insert().values(version=0))
            found = 0
        if found > VERSION:
            raise StoreError(f"{db.name}: schema version {found} is newer than this bonsai-tenant knows "
                             f"({VERSION}); run the newer bonsai-tenant")
        for step in STEPS[found:]:
            step(conn)
        conn.execute(schema.schema_version.update().values(version=VERSION))
    return found, VERSION
