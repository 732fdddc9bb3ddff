"""Stored completions, one tenant's at a time: save, get, list (paged, filtered), update metadata,
delete, and the deletion of entries past the tenant's retention.

Every statement filters on the tenant: an id of another tenant's completion behaves exactly like
an id that does not exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, exists, func, or_, select, update
from sqlalchemy.engine import Connection

from .schema import completion_metadata as kv
from .schema import completions as table

DAY = 86400


@dataclass(frozen=True)
class Page:
    """One page of a list: the items and whether more follow."""

    items: list[dict[str, Any]]
    has_more: bool


@dataclass(frozen=True)
class Query:
    """What `GET /v1/chat/completions` asks for."""

    after: str | None = None
    limit: int = 20
    order: str = "asc"  # by creation time: "asc" or "desc"
    model: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()  # every pair must match


def cutoff(retention_days: int | None, now: float) -> int | None:
    """The oldest `created` a tenant still keeps, or None when it keeps everything."""
    return None if retention_days is None else int(now) - retention_days * DAY


def _live(tenant: str, oldest: int | None) -> Any:
    """Rows of `tenant` still within its retention."""
    own = table.c.tenant == tenant
    return own if oldest is None else and_(own, table.c.created >= oldest)


def _stored(row: Any) -> dict[str, Any]:
    """The stored completion as the API returns it: the chat.completion object and its metadata."""
    return {**json.loads(row.completion), "metadata": json.loads(row.metadata)}


def _insert_metadata(conn: Connection, tenant: str, seq: int, metadata: dict[str, str]) -> None:
    if metadata:
        conn.execute(kv.insert(), [{"seq": seq, "tenant": tenant, "key": k, "value": v} for k, v in metadata.items()])


def save(conn: Connection, tenant: str, completion: dict[str, Any], messages: list[Any],
         metadata: dict[str, str]) -> None:
    """Keep one completion with the messages that asked for it and its metadata."""
    seq = conn.execute(table.insert().values(
        tenant=tenant, id=completion["id"], created=int(completion["created"]), model=completion["model"],
        completion=json.dumps(completion), messages=json.dumps(messages), metadata=json.dumps(metadata),
    ).returning(table.c.seq)).scalar_one()
    _insert_metadata(conn, tenant, seq, metadata)


def get(conn: Connection, tenant: str, completion_id: str, oldest: int | None) -> dict[str, Any] | None:
    row = conn.execute(select(table.c.completion, table.c.metadata)
                       .where(_live(tenant, oldest), table.c.id == completion_id)).first()
    return None if row is None else _stored(row)


def messages(conn: Connection, tenant: str, completion_id: str, oldest: int | None) -> list[Any] | None:
    row = conn.execute(select(table.c.messages).where(_live(tenant, oldest), table.c.id == completion_id)).first()
    return None if row is None else json.loads(row.messages)


def position(conn: Connection, tenant: str, completion_id: str, oldest: int | None) -> tuple[int, int] | None:
    """(created, seq) of a completion of this tenant: where a page that starts after it begins."""
    row = conn.execute(select(table.c.created, table.c.seq)
                       .where(_live(tenant, oldest), table.c.id == completion_id)).first()
    return None if row is None else (row.created, row.seq)


def page(conn: Connection, tenant: str, query: Query, oldest: int | None, after: tuple[int, int] | None) -> Page:
    """Up to `query.limit` completions of this tenant in creation order, after `after` ((created, seq))."""
    where = [_live(tenant, oldest)]
    if query.model is not None:
        where.append(table.c.model == query.model)
    for key, value in query.metadata:
        where.append(exists().where(kv.c.seq == table.c.seq, kv.c.key == key, kv.c.value == value))
    descending = query.order == "desc"
    if after is not None:
        created, seq = after
        later = (table.c.created < created, and_(table.c.created == created, table.c.seq < seq)) if descending \
            else (table.c.created > created, and_(table.c.created == created, table.c.seq > seq))
        where.append(or_(*later))
    keys = (table.c.created.desc(), table.c.seq.desc()) if descending else (table.c.created, table.c.seq)
    rows = conn.execute(select(table.c.completion, table.c.metadata).where(*where).order_by(*keys)
                        .limit(query.limit + 1)).all()
    return Page([_stored(r) for r in rows[:query.limit]], len(rows) > query.limit)


def update_metadata(conn: Connection, tenant: str, completion_id: str, metadata: dict[str, str],
                    oldest: int | None) -> dict[str, Any] | None:
    """Replace the metadata of this tenant's completion; the updated completion, or None if it has none."""
    seq = conn.execute(update(table).where(_live(tenant, oldest), table.c.id == completion_id)
                       .values(metadata=json.dumps(metadata)).returning(table.c.seq)).scalar()
    if seq is None:
        return None
    conn.execute(delete(kv).where(kv.c.seq == seq))
    _insert_metadata(conn, tenant, seq, metadata)
    return get(conn, tenant, completion_id, oldest)


def remove(conn: Connection, tenant: str, completion_id: str, oldest: int | None) -> bool:
    """Delete this tenant's completion; False when it has none of that id."""
    seqs = select(table.c.seq).where(_live(tenant, oldest), table.c.id == completion_id).scalar_subquery()
    conn.execute(delete(kv).where(kv.c.tenant == tenant, kv.c.seq == seqs))
    return conn.execute(delete(table).where(_live(tenant, oldest), table.c.id == completion_id)).rowcount == 1


def purge(conn: Connection, tenant: str, oldest: int) -> int:
    """Delete this tenant's completions created before `oldest`; how many went."""
    old = select(table.c.seq).where(table.c.tenant == tenant, table.c.created < oldest)
    conn.execute(delete(kv).where(kv.c.tenant == tenant, kv.c.seq.in_(old)))
    return conn.execute(delete(table).where(table.c.tenant == tenant, table.c.created < oldest)).rowcount


def count(conn: Connection, tenant: str | None = None) -> int:
    """How many completions are stored (for one tenant, or all): what retention left."""
    query = select(func.count()).select_from(table)
    return conn.execute(query if tenant is None else query.where(table.c.tenant == tenant)).scalar_one()
