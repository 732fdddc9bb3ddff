"""Quota holds: a request's tokens reserved before it runs and settled to what it used when it ends.

`quota_days` keeps, per tenant and UTC day, the tokens used plus those held by requests still
running. A hold is one conditional UPDATE (admitted only if the charge stays within the quota), so
concurrent requests on any number of servers cannot together pass the quota: PostgreSQL re-checks
the condition on the row once the row lock is its own, and SQLite writers take turns (BEGIN
IMMEDIATE). A day's row starts from the day's usage, so holds begin right even on a day half used.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from .schema import quota_days as table
from .schema import usage


@dataclass(frozen=True)
class Hold:
    """Tokens reserved for one request of `tenant` on `day`; `charged`: the day's charge after the
    attempt (with this hold when admitted)."""

    tenant: str
    model: str
    day: str
    tokens: int
    admitted: bool
    charged: int


def _charged(conn: Connection, tenant: str, day: str) -> int:
    return int(conn.execute(select(table.c.charged).where(table.c.tenant == tenant, table.c.day == day)).scalar_one())


def reserve(conn: Connection, tenant: str, model: str, day: str, tokens: int, quota: int | None) -> Hold:
    """Hold `tokens` for `tenant` on `day` if its charge stays within `quota` (None: always)."""
    used = select(func.coalesce(func.sum(usage.c.prompt_tokens + usage.c.completion_tokens), 0)) \
        .where(usage.c.tenant == tenant, usage.c.day == day).scalar_subquery()
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(dialect.insert(table).values(tenant=tenant, day=day, charged=used).on_conflict_do_nothing())
    statement = update(table).where(table.c.tenant == tenant, table.c.day == day) \
        .values(charged=table.c.charged + tokens)
    if quota is not None:
        statement = statement.where(table.c.charged + tokens <= quota)
    admitted = conn.execute(statement).rowcount == 1
    return Hold(tenant, model, day, tokens, admitted, _charged(conn, tenant, day))


def release(conn: Connection, hold: Hold, used: int) -> None:
    """Settle an admitted hold: the day's charge keeps the `used` tokens and drops the rest."""
    conn.execute(update(table).where(table.c.tenant == hold.tenant, table.c.day == hold.day)
                 .values(charged=table.c.charged + (used - hold.tokens)))
