"""The `[database]` table: where tenant state lives (a SQLite file next to the tenants file, or PostgreSQL)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from .errors import ConfigError

MEMORY = "sqlite://"
_SCHEMES = {"sqlite": "sqlite+pysqlite", "sqlite+pysqlite": "sqlite+pysqlite",
            "postgresql": "postgresql+psycopg", "postgresql+psycopg": "postgresql+psycopg"}
_USE = "use sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE"


@dataclass(frozen=True)
class DatabaseSpec:
    """A SQLAlchemy URL and how long a SQLite writer waits for another process's lock."""

    # sqlite+pysqlite:///FILE or postgresql+psycopg://...; "sqlite://" keeps everything in memory
    # (embedding and tests: nothing survives the process, nothing is shared with another)
    url: str = MEMORY
    # seconds a SQLite write waits for a lock another process holds, then the request is a 503
    lock_timeout: float = 10.0

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")


def normalise_url(url: str, where: str, base: Path | None = None) -> str:
    """`url` with the driver made explicit (psycopg, pysqlite) and a relative SQLite path made
    relative to `base`; a ConfigError naming `where` when it is neither SQLite nor PostgreSQL."""
    try:
        parsed: URL = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"{where}: not a database URL ({_USE})") from exc
    driver = _SCHEMES.get(parsed.drivername)
    if driver is None:
        raise ConfigError(f"{where}: {parsed.drivername!r} is not supported ({_USE})")
    parsed = parsed.set(drivername=driver)
    if driver.startswith("sqlite") and parsed.database and parsed.database != ":memory:":
        file = Path(parsed.database).expanduser()
        if not file.is_absolute() and base is not None:
            file = base / file
        parsed = parsed.set(database=str(file))
    return parsed.render_as_string(hide_password=False)


def shown(url: str) -> str:
    """The URL for messages and logs: the password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def database_spec(path: Path, checked: dict[str, Any], environ: Mapping[str, str]) -> DatabaseSpec:
    """The `[database]` table of the tenants file at `path` (its keys already checked).
    No table, or no url: a SQLite file next to the tenants file (tenants.toml -> tenants.db)."""
    where = f"{path}: database"
    url = checked.get("url")
    if "url-env" in checked:
        variable = checked["url-env"]
        if not isinstance(variable, str) or url is not None:
            raise ConfigError(f"{where}.url-env: an environment variable name, instead of url (not both)")
        url = environ.get(variable, "")
        if not url:
            raise ConfigError(f"{where}.url-env: environment variable {variable} is not set or empty")
    if url is None:
        url = f"sqlite:///{path.resolve().with_suffix('.db')}"
    if not isinstance(url, str):
        raise ConfigError(f"{where}.url: must be a string ({_USE})")
    timeout = checked.get("lock-timeout", DatabaseSpec.lock_timeout)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise ConfigError(f"{where}.lock-timeout: must be a number of seconds >= 0, got {timeout!r}")
    return DatabaseSpec(normalise_url(url, f"{where}.url", path.resolve().parent), float(timeout))
