"""The tenant database: stored completions and usage in SQLite (default) or PostgreSQL, via SQLAlchemy."""

from .completions import Page, Query
from .engine import StoreError, StoreRefused
from .holds import Hold
from .store import Store, open_store
from .usage import UsageRow

__all__ = ["Hold", "Page", "Query", "Store", "StoreError", "StoreRefused", "UsageRow", "open_store"]
