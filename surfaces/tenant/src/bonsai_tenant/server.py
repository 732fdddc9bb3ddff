"""The OpenAI-compatible HTTP API (Starlette): auth per tenant, chat completions, stored completions."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ._vendor.bonsai.errors import BonsaiError
from .errors import ApiError, InvalidRequest
from .events import Backend, Event
from .openai_request import ChatRequest, parse_chat_request, parse_json
from .openai_response import Completion, sse
from .tenants import ModelSpec, ServerConfig, Tenant

log = logging.getLogger("bonsai_tenant")
BackendFactory = Callable[[ModelSpec], Backend]
STORED_LIMIT = 1000


def default_backend_factory(spec: ModelSpec) -> Backend:
    """The bonsai runtime on the model's GGUF file (the default model when no path is set)."""
    from .runtime_backend import RuntimeBackend

    return RuntimeBackend.open(spec.path)


class _State:
    """What the app keeps between requests: backends per model, stored completions per tenant."""

    def __init__(self, config: ServerConfig, factory: BackendFactory) -> None:
        self.config = config
        self.factory = factory
        self.backends: dict[str, Backend] = {}
        self.stored: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self.lock = threading.Lock()

    def backend(self, spec: ModelSpec) -> Backend:
        with self.lock:
            if spec.id not in self.backends:
                self.backends[spec.id] = self.factory(spec)
            return self.backends[spec.id]

    def store(self, tenant: Tenant, completion: Completion) -> None:
        with self.lock:
            self.stored[completion.id] = (tenant.name, completion.to_dict())
            while len(self.stored) > STORED_LIMIT:
                self.stored.popitem(last=False)


def _error_response(error: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error_response(ApiError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}",
                                    code="not_found" if exc.status_code == 404 else None))


def _turn(state: _State, spec: ModelSpec, req: ChatRequest) -> Iterator[Event]:
    """Start one turn (loads the model on first use); request problems the backend finds are 400s."""
    try:
        backend = state.backend(spec)
        return iter(backend.stream(req.messages, tools=req.tools, max_tokens=req.max_tokens,
                                   temperature=req.temperature))
    except InvalidRequest as exc:
        raise ApiError(400, str(exc), code="invalid_value") from exc
    except BonsaiError as exc:
        raise ApiError(500, f"model {spec.id!r} failed to start: {exc}", type="server_error") from exc


def _run_turn(state: _State, spec: ModelSpec, req: ChatRequest) -> Completion:
    completion = Completion(req.model)
    events = _turn(state, spec, req)
    try:
        for event in events:
            completion.add(event)
    except BonsaiError as exc:
        raise ApiError(500, f"generation failed: {exc}", type="server_error") from exc
    return completion


def _sse_turn(state: _State, tenant: Tenant, req: ChatRequest, events: Iterator[Event]) -> Iterator[bytes]:
    completion = Completion(req.model)
    yield sse(completion.first_chunk())
    try:
        for event in events:
            chunk = completion.add(event)
            if chunk is not None:
                yield sse(chunk)
    except Exception as exc:  # noqa: BLE001 - headers are sent; the error goes in the stream
        log.exception("generation failed mid-stream")
        yield sse(ApiError(500, f"generation failed: {exc}", type="server_error").body())
        yield sse("[DONE]")
        return
    yield sse(completion.last_chunk())
    if req.include_usage:
        yield sse(completion.usage_chunk())
    yield sse("[DONE]")
    if req.store:
        state.store(tenant, completion)


def create_app(config: ServerConfig, backend_factory: BackendFactory = default_backend_factory) -> Starlette:
    """The ASGI app. `backend_factory` makes one Backend per model id, on first use."""
    state = _State(config, backend_factory)

    async def chat_completions(request: Request) -> Response:
        tenant = config.authenticate(request.headers.get("authorization"))
        req = parse_chat_request(parse_json(await request.body()))
        spec = config.model_for(tenant, req.model)
        if req.stream:
            events = await run_in_threadpool(_turn, state, spec, req)
            return StreamingResponse(_sse_turn(state, tenant, req, events), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        completion = await run_in_threadpool(_run_turn, state, spec, req)
        if req.store:
            state.store(tenant, completion)
        return JSONResponse(completion.to_dict())

    async def stored_completion(request: Request) -> Response:
        tenant = config.authenticate(request.headers.get("authorization"))
        completion_id = request.path_params["completion_id"]
        owner, body = state.stored.get(completion_id, (None, None))
        if owner is None:
            raise ApiError(404, f"no stored completion {completion_id!r} (send store=true to keep one)",
                           code="not_found")
        if owner != tenant.name:
            raise ApiError(403, f"completion {completion_id!r} belongs to another tenant",
                           type="permission_error", code="forbidden")
        return JSONResponse(body)

    async def list_models(request: Request) -> Response:
        tenant = config.authenticate(request.headers.get("authorization"))
        data = [{"id": m.id, "object": "model", "created": 0, "owned_by": "bonsai"}
                for m in config.models.values() if m.allows(tenant)]
        return JSONResponse({"object": "list", "data": data})

    async def get_model(request: Request) -> Response:
        tenant = config.authenticate(request.headers.get("authorization"))
        spec = config.model_for(tenant, request.path_params["model_id"])
        return JSONResponse({"id": spec.id, "object": "model", "created": 0, "owned_by": "bonsai"})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/chat/completions/{completion_id}", stored_completion, methods=["GET"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", get_model, methods=["GET"]),
        Route("/healthz", health, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={ApiError: _api_error, HTTPException: _http_error})
