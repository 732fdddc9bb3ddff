"""Token usage per tenant, model and UTC day: added to by every request (one atomic upsert, safe with
several servers on one database), read for quotas and for `bonsai-tenant usage`."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from .schema import usage as table


@dataclass(frozen=True)
class UsageRow:
    """What one tenant used of one model on one day."""

    day: str
    tenant: str
    model: str
    requests: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_tokens": self.total_tokens}


def day_of(now: float) -> str:
    """The UTC day of a unix time, as YYYY-MM-DD."""
    return time.strftime("%Y-%m-%d", time.gmtime(now))


def add(conn: Connection, tenant: str, model: str, day: str, prompt_tokens: int, completion_tokens: int) -> None:
    """Count one request: insert the day's row or add to it, in one statement."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table).values(tenant=tenant, model=model, day=day, requests=1,
                                             prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    conn.execute(statement.on_conflict_do_update(
        index_elements=[table.c.tenant, table.c.model, table.c.day],
        set_={"requests": table.c.requests + 1,
              "prompt_tokens": table.c.prompt_tokens + statement.excluded.prompt_tokens,
              "completion_tokens": table.c.completion_tokens + statement.excluded.completion_tokens}))


def rows(conn: Connection, tenant: str | None = None, since: str | None = None) -> list[UsageRow]:
    """Every (day, tenant, model) row, oldest day first; only `tenant`'s, only from `since` on."""
    query = select(table.c.day, table.c.tenant, table.c.model, table.c.requests, table.c.prompt_tokens,
                   table.c.completion_tokens).order_by(table.c.day, table.c.tenant, table.c.model)
    if tenant is not None:
        query = query.where(table.c.tenant == tenant)
    if since is not None:
        query = query.where(table.c.day >= since)
    return [UsageRow(r.day, r.tenant, r.model, int(r.requests), int(r.prompt_tokens), int(r.completion_tokens))
            for r in conn.execute(query)]
