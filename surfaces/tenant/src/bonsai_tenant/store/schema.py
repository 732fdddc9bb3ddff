"""The tenant database's tables (schema version 2): stored completions, their metadata, usage per day,
and each tenant's tokens charged against its daily quota.

Every row carries its tenant, and every query the server makes filters on it.
"""

from __future__ import annotations

from sqlalchemy import (
                        BigInteger,
                        Column,
                        ForeignKey,
                        Index,
                        Integer,
                        MetaData,
                        PrimaryKeyConstraint,
                        String,
                        Table,
                        Text,
                        UniqueConstraint,
)

metadata = MetaData()
# SQLite's INTEGER PRIMARY KEY is its row id (autoincrementing); PostgreSQL gets a BIGINT identity
_Serial = BigInteger().with_variant(Integer(), "sqlite")

schema_version = Table(
    "bonsai_schema_version", metadata,
    Column("version", Integer, nullable=False),  # one row: the last migration step applied
)

completions = Table(
    "stored_completions", metadata,
    Column("seq", _Serial, primary_key=True, autoincrement=True),  # insertion order: ties of `created`
    Column("tenant", String(128), nullable=False),
    Column("id", String(64), nullable=False),  # chatcmpl-...: unique per tenant
    Column("created", BigInteger, nullable=False),  # unix seconds, the completion's `created`
    Column("model", String(256), nullable=False),
    Column("completion", Text, nullable=False),  # the chat.completion object, JSON
    Column("messages", Text, nullable=False),  # the request's messages as sent, JSON
    Column("metadata", Text, nullable=False),  # {key: value}, JSON (also in completion_metadata)
    UniqueConstraint("tenant", "id", name="stored_completions_tenant_id"),
    Index("stored_completions_tenant_created", "tenant", "created", "seq"),
)

completion_metadata = Table(
    "completion_metadata", metadata,  # one row per metadata pair: `metadata[key]=value` filters
    Column("seq", _Serial, ForeignKey("stored_completions.seq"), nullable=False),
    Column("tenant", String(128), nullable=False),
    Column("key", String(64), nullable=False),
    Column("value", String(512), nullable=False),
    PrimaryKeyConstraint("seq", "key", name="completion_metadata_pk"),
    Index("completion_metadata_tenant_key", "tenant", "key", "value"),
)

usage = Table(
    "usage", metadata,  # one row per tenant, model and UTC day; each request adds to it
    Column("tenant", String(128), nullable=False),
    Column("model", String(256), nullable=False),
    Column("day", String(10), nullable=False),  # YYYY-MM-DD (UTC)
    Column("requests", BigInteger, nullable=False),
    Column("prompt_tokens", BigInteger, nullable=False),
    Column("completion_tokens", BigInteger, nullable=False),
    PrimaryKeyConstraint("tenant", "model", "day", name="usage_pk"),
)

quota_days = Table(
    "quota_days", metadata,  # one row per tenant and UTC day: what counts against its daily quota
    Column("tenant", String(128), nullable=False),
    Column("day", String(10), nullable=False),  # YYYY-MM-DD (UTC)
    # tokens used that day plus tokens held by requests still running (their prompt and max_tokens)
    Column("charged", BigInteger, nullable=False),
    PrimaryKeyConstraint("tenant", "day", name="quota_days_pk"),
)
