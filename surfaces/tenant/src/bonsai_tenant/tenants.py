"""Who may call the server: tenants, their API keys (hashed), and the models each may use."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .db_config import DatabaseSpec, database_spec
from .errors import ApiError, ConfigError

_HEX64 = re.compile(r"[0-9a-f]{64}")
MIN_KEY_LENGTH = 16  # characters of an API key read from the environment (shorter ones are guessable)


def key_digest(key: str) -> str:
    """The sha256 hex digest stored in place of an API key."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Tenant:
    """One customer: its name, the sha256 of each of its API keys (several while a key is rotated),
    and how its stored state is bounded."""

    name: str
    key_sha256s: tuple[str, ...]
    # stored completions older than this many days are deleted (None: kept until deleted)
    retention_days: int | None = None
    # prompt + completion tokens this tenant may use per UTC day, all models together (None: no quota)
    daily_token_quota: int | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A model id clients may send: its GGUF path (None: the default model) and who may use it."""

    id: str
    path: str | None = None
    # Tenants allowed to use this model; None means every tenant.
    tenants: frozenset[str] | None = None
    # The most positions (prompt + reply) one request may use; None: the model's own context length.
    max_positions: int | None = None

    def allows(self, tenant: Tenant) -> bool:
        return self.tenants is None or tenant.name in self.tenants


@dataclass(frozen=True)
class Limits:
    """How much work one request may ask for, and how many may wait."""

    # the largest request body read (a larger one is a 413 before it is read)
    max_body_bytes: int = 1 << 20
    # requests waiting per model, all tenants together (each tenant gets an equal share); more: 429
    queue_size: int = 16
    # seconds from a request's arrival to its last byte, waiting included; then it is stopped
    request_timeout: float = 300.0


def _unique_keys(tenants: tuple[Tenant, ...]) -> None:
    """Two tenants with one key would authenticate as each other: refuse, naming both."""
    seen: dict[str, str] = {}
    for tenant in tenants:
        for digest in tenant.key_sha256s:
            if digest in seen:
                other = "itself twice" if seen[digest] == tenant.name else f"tenants.{seen[digest]}"
                raise ConfigError(f"tenants.{tenant.name}: has the same API key as {other}; "
                                  "every tenant needs its own keys")
            seen[digest] = tenant.name


@dataclass(frozen=True)
class ServerConfig:
    """Everything the server needs to decide who may do what, and how much."""

    tenants: tuple[Tenant, ...]
    models: Mapping[str, ModelSpec]
    limits: Limits = Limits()
    database: DatabaseSpec = DatabaseSpec()

    def __post_init__(self) -> None:
        _unique_keys(self.tenants)

    @classmethod
    def from_keys(cls, keys: Mapping[str, str], models: Mapping[str, ModelSpec] | None = None,
                  limits: Limits | None = None, database: DatabaseSpec | None = None,
                  **tenant_settings: Any) -> ServerConfig:
        """Build from {tenant name: plain API key} (tests and embedding); default model for all; a
        database in memory unless given. `tenant_settings`: Tenant fields for every tenant."""
        tenants = tuple(Tenant(name, (key_digest(key),), **tenant_settings) for name, key in sorted(keys.items()))
        return cls(tenants, models if models is not None else {"smollm2": ModelSpec("smollm2")}, limits or Limits(),
                   database or DatabaseSpec())

    def tenant(self, name: str) -> Tenant | None:
        return next((t for t in self.tenants if t.name == name), None)

    def authenticate(self, authorization: str | None) -> Tenant:
        """The tenant whose key is in `Authorization: Bearer <key>`, else a 401."""
        scheme, _, key = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise ApiError(401, "missing API key: send 'Authorization: Bearer <your tenant key>'",
                           code="invalid_api_key")
        digest = key_digest(key.strip())
        found = None
        for tenant in self.tenants:  # compare against every key of every tenant, in constant time each
            for known in tenant.key_sha256s:
                if hmac.compare_digest(known, digest):
                    found = tenant
        if found is None:
            raise ApiError(401, "invalid API key", code="invalid_api_key")
        return found

    def model_for(self, tenant: Tenant, model_id: str) -> ModelSpec:
        """The model if this tenant may use it; else a 404, the same for another tenant's model as for
        one that does not exist (as OpenAI answers), so model names reveal nothing across tenants."""
        spec = self.models.get(model_id)
        if spec is None or not spec.allows(tenant):
            raise ApiError(404, f"model {model_id!r} does not exist; see GET /v1/models",
                           param="model", code="model_not_found")
        return spec


def _string_list(value: Any, where: str) -> frozenset[str]:
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ConfigError(f"{where}: must be a list of tenant names")
    return frozenset(value)


def _table(where: str, table: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """`table` if it is a TOML table holding only `keys`; else a ConfigError naming what is wrong."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key (use {', '.join(keys[:-1])} or {keys[-1]})")
    return table


def _tenant(path: Path, name: str, table: Any, environ: Mapping[str, str]) -> Tenant:
    where = f"{path}: tenants.{name}"
    table = _table(where, table, ("api-key-env", "api-key-sha256", "retention-days", "daily-token-quota"))
    bounds = (_positive(table, "retention-days", where, int, None), _positive(table, "daily-token-quota", where, int, None))
    digests = [*_hashes(table, where), *(key_digest(k) for k in _env_keys(table, where, environ))]
    if not digests:
        raise ConfigError(f"{where}: needs api-key-env (an environment variable name, or a list of them) or "
                          "api-key-sha256 (a sha256, or a list of them)")
    return Tenant(name, tuple(digests), *bounds)


def _one_or_list(table: dict[str, Any], key: str, where: str, what: str) -> list[str]:
    """`table[key]` as a list: a string, or a list of strings (absent: [])."""
    value = table.get(key, [])
    items = [value] if isinstance(value, str) else value
    if not (isinstance(items, list) and all(isinstance(v, str) for v in items)):
        raise ConfigError(f"{where}.{key}: must be {what}, or a list of them")
    return items


def _hashes(table: dict[str, Any], where: str) -> list[str]:
    digests = _one_or_list(table, "api-key-sha256", where, "64 lowercase hex digits (the sha256 of a key)")
    for digest in digests:
        if not _HEX64.fullmatch(digest):
            raise ConfigError(f"{where}.api-key-sha256: {digest[:70]!r} is not 64 lowercase hex digits "
                              "(the sha256 of a key: bonsai-tenant hash-key)")
    return digests


def _env_keys(table: dict[str, Any], where: str, environ: Mapping[str, str]) -> list[str]:
    keys = []
    for variable in _one_or_list(table, "api-key-env", where, "an environment variable name"):
        key = environ.get(variable, "").strip()
        if not key:
            raise ConfigError(f"{where}.api-key-env: environment variable {variable} is not set or empty")
        if len(key) < MIN_KEY_LENGTH:
            raise ConfigError(f"{where}.api-key-env: the key in {variable} has {len(key)} characters; a key needs at "
                              f"least {MIN_KEY_LENGTH} (bonsai-tenant new-key makes one)")
        keys.append(key)
    return keys


def _positive(table: dict[str, Any], key: str, where: str, kind: type, default: Any) -> Any:
    if key not in table:
        return default
    value = table[key]
    ok = isinstance(value, int | float) if kind is float else isinstance(value, int)
    if isinstance(value, bool) or not ok or value <= 0:
        what = "a positive number of seconds" if kind is float else "a positive integer"
        raise ConfigError(f"{where}.{key}: must be {what}, got {value!r}")
    return kind(value)


def _model(path: Path, model_id: str, table: Any, tenant_names: set[str]) -> ModelSpec:
    where = f"{path}: models.{model_id}"
    table = _table(where, table, ("path", "tenants", "max-positions"))
    model_path = table.get("path")
    if model_path is not None and not isinstance(model_path, str):
        raise ConfigError(f"{where}.path: must be a string (a GGUF file)")
    tenants = _string_list(table["tenants"], f"{where}.tenants") if "tenants" in table else None
    for name in sorted((tenants or frozenset()) - tenant_names):
        raise ConfigError(f"{where}.tenants: {name!r} is not a tenant in this file")
    return ModelSpec(model_id, model_path, tenants, _positive(table, "max-positions", where, int, None))


def _limits(path: Path, table: Any) -> Limits:
    where = f"{path}: server"
    table = _table(where, table, ("max-body-bytes", "queue-size", "request-timeout"))
    default = Limits()
    return Limits(_positive(table, "max-body-bytes", where, int, default.max_body_bytes),
                  _positive(table, "queue-size", where, int, default.queue_size),
                  _positive(table, "request-timeout", where, float, default.request_timeout))


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the tenants file ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc


def _database(path: Path, data: dict[str, Any], environ: Mapping[str, str]) -> DatabaseSpec:
    table = _table(f"{path}: database", data.get("database", {}), ("url", "url-env", "lock-timeout"))
    return database_spec(path, table, environ)


def load_database(path: str | Path, environ: Mapping[str, str] | None = None) -> DatabaseSpec:
    """Only the `[database]` of a tenants file (for `bonsai-tenant usage`: no tenant keys needed)."""
    path = Path(path)
    return _database(path, _read(path), os.environ if environ is None else environ)


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> ServerConfig:
    """Read a TOML file with `[tenants.NAME]`, `[models.ID]`, `[server]` and `[database]` tables; errors
    name the key."""
    path = Path(path)
    environ = os.environ if environ is None else environ
    data = _read(path)
    unknown = sorted(set(data) - {"tenants", "models", "server", "database"})
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown table (use [tenants.NAME], [models.ID], [server] "
                          "and [database])")
    tenants_table = data.get("tenants") or {}
    if not tenants_table:
        raise ConfigError(f"{path}: tenants: define at least one [tenants.NAME] table")
    tenants = tuple(_tenant(path, n, t, environ) for n, t in sorted(tenants_table.items()))
    models_table = data.get("models") or {"smollm2": {}}
    names = {t.name for t in tenants}
    models = {m: _model(path, m, t, names) for m, t in sorted(models_table.items())}
    database = _database(path, data, environ)
    try:
        return ServerConfig(tenants, models, _limits(path, data.get("server", {})), database)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
