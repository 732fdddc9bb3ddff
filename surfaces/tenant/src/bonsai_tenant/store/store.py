"""The server's state in its database: what each tenant stored and used, every call scoped to one tenant.

Each method is one transaction; a database that fails raises StoreError (one line naming it), so a
caller can tell its client nothing was kept rather than lose it silently.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import Connection

from ..db_config import DatabaseSpec
from . import completions, holds, usage
from .completions import Page, Query, cutoff
from .engine import Database, StoreError
from .holds import Hold
from .migrate import migrate
from .usage import UsageRow, day_of


class Store:
    """Stored completions and usage. `retention`: days each tenant keeps its completions (absent: for ever)."""

    def __init__(self, db: Database, retention: Mapping[str, int | None] | None = None,
                 now: Callable[[], float] = time.time) -> None:
        self.db = db
        self.retention = dict(retention or {})
        self.now = now

    def _oldest(self, tenant: str) -> int | None:
        return cutoff(self.retention.get(tenant), self.now())

    # requests

    def record(self, tenant: str, model: str, prompt_tokens: int, completion_tokens: int,
               stored: tuple[dict[str, Any], list[Any], dict[str, str]] | None = None) -> None:
        """One finished request: its usage, and (store=true) its completion, messages and metadata,
        both in one transaction; the tenant's completions past retention go in the same one."""
        with self.db.transaction(write=True) as conn:
            usage.add(conn, tenant, model, day_of(self.now()), prompt_tokens, completion_tokens)
            if stored is not None:
                self._keep(conn, tenant, stored)

    def reserve(self, tenant: str, model: str, tokens: int, quota: int | None) -> Hold:
        """Hold `tokens` of today's quota for one request (see holds.py); `Hold.admitted` is False
        when they do not fit, and nothing is held then."""
        with self.db.transaction(write=True) as conn:
            return holds.reserve(conn, tenant, model, day_of(self.now()), tokens, quota)

    def settle(self, hold: Hold, prompt_tokens: int, completion_tokens: int,
               stored: tuple[dict[str, Any], list[Any], dict[str, str]] | None = None) -> None:
        """End a request: its usage counted on its hold's day, the hold cut to what it used, and its
        completion kept (store=true), in one transaction. When keeping the completion fails, the usage
        is still counted (a second transaction) before the failure is raised: tokens generated are
        never left uncounted because the reply could not be stored."""
        try:
            with self.db.transaction(write=True) as conn:
                self._settle(conn, hold, prompt_tokens, completion_tokens)
                if stored is not None:
                    self._keep(conn, hold.tenant, stored)
        except Exception:  # noqa: BLE001 - whatever broke keeping the reply, the usage still counts
            if stored is None:
                raise
            with self.db.transaction(write=True) as conn:
                self._settle(conn, hold, prompt_tokens, completion_tokens)
            raise

    @staticmethod
    def _settle(conn: Connection, hold: Hold, prompt_tokens: int, completion_tokens: int) -> None:
        if prompt_tokens or completion_tokens:  # a request that never reached the model is no request
            usage.add(conn, hold.tenant, hold.model, hold.day, prompt_tokens, completion_tokens)
        holds.release(conn, hold, prompt_tokens + completion_tokens)

    def _keep(self, conn: Connection, tenant: str, stored: tuple[dict[str, Any], list[Any], dict[str, str]]) -> None:
        completions.save(conn, tenant, *stored)
        oldest = self._oldest(tenant)
        if oldest is not None:
            completions.purge(conn, tenant, oldest)

    # stored completions

    def get(self, tenant: str, completion_id: str) -> dict[str, Any] | None:
        with self.db.transaction() as conn:
            return completions.get(conn, tenant, completion_id, self._oldest(tenant))

    def messages(self, tenant: str, completion_id: str) -> list[Any] | None:
        with self.db.transaction() as conn:
            return completions.messages(conn, tenant, completion_id, self._oldest(tenant))

    def page(self, tenant: str, query: Query) -> Page | None:
        """A page of this tenant's completions; None when `query.after` is not one of them."""
        oldest = self._oldest(tenant)
        with self.db.transaction() as conn:
            after = None
            if query.after is not None:
                after = completions.position(conn, tenant, query.after, oldest)
                if after is None:
                    return None
            return completions.page(conn, tenant, query, oldest, after)

    def update_metadata(self, tenant: str, completion_id: str, metadata: dict[str, str]) -> dict[str, Any] | None:
        with self.db.transaction(write=True) as conn:
            return completions.update_metadata(conn, tenant, completion_id, metadata, self._oldest(tenant))

    def delete(self, tenant: str, completion_id: str) -> bool:
        with self.db.transaction(write=True) as conn:
            return completions.remove(conn, tenant, completion_id, self._oldest(tenant))

    def purge(self) -> int:
        """Delete every tenant's completions past its retention (at start-up); how many went."""
        gone = 0
        with self.db.transaction(write=True) as conn:
            for tenant in self.retention:
                oldest = self._oldest(tenant)
                if oldest is not None:
                    gone += completions.purge(conn, tenant, oldest)
        return gone

    def count(self, tenant: str | None = None) -> int:
        with self.db.transaction() as conn:
            return completions.count(conn, tenant)

    # reports

    def usage(self, tenant: str | None = None, since: str | None = None) -> list[UsageRow]:
        with self.db.transaction() as conn:
            return usage.rows(conn, tenant, since)

    def close(self) -> None:
        self.db.close()


def open_store(spec: DatabaseSpec, retention: Mapping[str, int | None] | None = None,
               now: Callable[[], float] = time.time) -> Store:
    """Connect, create or migrate the schema, delete what retention no longer keeps: the Store, or a
    StoreError of one line naming the database (unreachable, corrupt, locked, too new)."""
    db = Database(spec)
    try:
        migrate(db)
        store = Store(db, retention, now)
        store.purge()
    except StoreError:
        db.close()
        raise
    return store
