"""The OpenAI-compatible HTTP API (Starlette): auth per tenant, chat completions, stored completions.

A request holds its prompt and max_tokens against its tenant's daily quota before it runs and is
settled to the tokens it used however it ends (billing.py). A finished request's usage (and, with
`store: true`, its completion) is written to the tenant database before the client is told the
request succeeded: when the database fails, the client gets a 503 (streaming: an error event
instead of the last chunk), never a reply whose record is lost.

Every response is JSON (or, for a stream, server-sent JSON events); a failure the server did not
expect is logged with a request id and answered with that id only, never with its text (paths,
file bytes, exception messages). Models load when the app is created, so a bad model stops the
start, not the first request.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ._vendor.bonsai.errors import BonsaiError
from .billing import reserve, settle, settle_quietly
from .errors import ApiError, ConfigError, InvalidRequest
from .events import Backend, Event
from .http_io import DONE, GONE, TIMEOUT, drive, error_response, internal_error, read_body, timeout_error
from .live_config import LiveConfig
from .openai_options import bad
from .openai_request import ChatRequest, parse_chat_request, parse_json
from .openai_response import Completion
from .scheduler import Lane
from .store import Store, open_store
from .stored_api import routes as stored_routes
from .stream import EventStream
from .tenants import ModelSpec, ServerConfig

log = logging.getLogger("bonsai_tenant")
WATCH_INTERVAL = 2.0  # seconds between looks at the tenants file for a change
BackendFactory = Callable[[ModelSpec], Backend]
_PARAM = re.compile(r"^([a-z_]+(?:[.\[][a-z_0-9\].]*)?): ")


def default_backend_factory(spec: ModelSpec) -> Backend:
    """The bonsai runtime on the model's GGUF file (the default model when no path is set)."""
    from .runtime_backend import RuntimeBackend

    return RuntimeBackend.open(spec.path, max_positions=spec.max_positions)


def load_backends(config: ServerConfig, factory: BackendFactory) -> dict[str, Backend]:
    """Every model, loaded now: a ConfigError of one line naming the model when one cannot load."""
    backends = {}
    for spec in config.models.values():
        try:
            backends[spec.id] = factory(spec)
        except BonsaiError as exc:
            raise ConfigError(f"models.{spec.id}: {' '.join(str(exc).split())}") from exc
        except Exception as exc:  # noqa: BLE001 - a plug-in factory: any failure stops the start the same way
            raise ConfigError(f"models.{spec.id}: cannot load it ({type(exc).__name__}: "
                              f"{' '.join(str(exc).split())})") from exc
    return backends


class _State:
    """What the app keeps between requests: backends and lanes per model; the tenant database."""

    def __init__(self, config: ServerConfig, backends: dict[str, Backend], store: Store) -> None:
        self.config = config
        self.backends = backends
        self.lanes = {m: Lane(config.limits.queue_size, len(config.tenants)) for m in backends}
        self.store = store


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error_response(ApiError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}",
                                    code="not_found" if exc.status_code == 404 else None))


class JsonErrors:
    """Outermost guard: an unexpected exception becomes a JSON 500 (the connection stays usable)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception:
            request_id = secrets.token_hex(6)
            log.exception("request %s: unexpected error", request_id)
            if not started:
                await error_response(internal_error(request_id))(scope, receive, send)


def _check_features(backend: Backend, spec: ModelSpec, req: ChatRequest) -> None:
    """A parameter the model's backend does not honour is a 400, never silently dropped."""
    features: frozenset[str] = getattr(backend, "features", frozenset())
    for name in req.options():
        if name not in features:
            raise bad(f"{name}: not supported by model {spec.id!r}", name)


def _start(backend: Backend, req: ChatRequest, request_id: str) -> Iterator[Event]:
    """Validate and encode the turn (no generation yet): request problems are 400s naming the field."""
    try:
        return iter(backend.stream(req.messages, tools=req.tools, max_tokens=req.max_tokens,
                                   temperature=req.temperature, **req.options()))
    except InvalidRequest as exc:
        match = _PARAM.match(str(exc))
        raise ApiError(400, str(exc), param=match.group(1) if match else None, code="invalid_value") from exc
    except Exception as exc:
        log.exception("request %s: the model could not start the turn", request_id)
        raise internal_error(request_id, "the model could not start") from exc


def create_app(config: ServerConfig, backend_factory: BackendFactory = default_backend_factory,
               store: Store | None = None, config_path: str | Path | None = None,
               watch_interval: float = WATCH_INTERVAL) -> Starlette:
    """The ASGI app. Loads one Backend per model id now (ConfigError naming the model if one fails) and
    opens the tenant database (`config.database` unless `store` is given; StoreError of one line).
    With `config_path` (the file `config` came from), its tenants reload on SIGHUP and when it changes."""
    if store is None:
        store = open_store(config.database, {t.name: t.retention_days for t in config.tenants})
    state = _State(config, load_backends(config, backend_factory), store)
    limits = config.limits

    def tenants_changed(new: ServerConfig) -> None:
        store.retention = {t.name: t.retention_days for t in new.tenants}
        for lane in state.lanes.values():
            lane.share = max(1, math.ceil(lane.queue_size / max(1, len(new.tenants))))

    live = LiveConfig(config, config_path, on_change=tenants_changed)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with live.watching(watch_interval):
            yield

    async def chat_completions(request: Request) -> Response:
        arrival, request_id = time.monotonic(), secrets.token_hex(6)
        tenant = live.authenticate(request.headers.get("authorization"))
        req = parse_chat_request(parse_json(await read_body(request, limits.max_body_bytes)))
        spec = live.model_for(tenant, req.model)
        backend, lane = state.backends[spec.id], state.lanes[spec.id]
        _check_features(backend, spec, req)
        lane.admit(tenant.name)  # a full queue is refused before the prompt is even encoded
        events = await run_in_threadpool(_start, backend, req, request_id)
        hold = await reserve(state.store, tenant, req, events)  # from here on, the hold is settled
        deadline = arrival + limits.request_timeout
        if req.stream:
            return EventStream(state.store, req, events, lane, tenant.name, deadline,  # type: ignore[return-value]
                               limits.request_timeout, request_id, hold)
        completion = Completion(req.model, logprobs=req.logprobs is not None)

        async def emit(event: Event) -> None:
            completion.add(event)

        async def nothing() -> None:
            return None

        try:
            outcome = await drive(events, lane, tenant.name, deadline, request.receive, emit, nothing)
        except BaseException as exc:
            await settle_quietly(state.store, hold, req, completion, events)
            if isinstance(exc, ApiError) or not isinstance(exc, Exception):
                raise
            log.exception("request %s: generation failed", request_id)
            raise internal_error(request_id, "generation failed") from exc
        if outcome != DONE:
            await settle_quietly(state.store, hold, req, completion, events)  # what it generated counts
        if outcome == GONE:
            return Response(status_code=499)  # nobody reads it: the client is gone
        if outcome == TIMEOUT:
            raise timeout_error(limits.request_timeout)
        await settle(state.store, hold, req, completion, events, keep=req.store)
        return JSONResponse(completion.to_dict())

    async def list_models(request: Request) -> Response:
        tenant = live.authenticate(request.headers.get("authorization"))
        data = [{"id": m.id, "object": "model", "created": 0, "owned_by": "bonsai"}
                for m in live.models.values() if m.allows(tenant)]
        return JSONResponse({"object": "list", "data": data})

    async def get_model(request: Request) -> Response:
        tenant = live.authenticate(request.headers.get("authorization"))
        spec = live.model_for(tenant, request.path_params["model_id"])
        return JSONResponse({"id": spec.id, "object": "model", "created": 0, "owned_by": "bonsai"})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        *stored_routes(live, store),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", get_model, methods=["GET"]),
        Route("/healthz", health, methods=["GET"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(JsonErrors)], lifespan=lifespan,
                     exception_handlers={ApiError: _api_error, HTTPException: _http_error})
