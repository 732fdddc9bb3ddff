"""Stored completions over HTTP, the OpenAI way: list, get, messages, update metadata, delete.

Every handler acts for the calling tenant only. Another tenant's completion id is answered exactly
like an id that never existed (404, the same message), so ids reveal nothing across tenants.
Database calls run off the event loop; a database that fails is a 503 naming a request id.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import openai_options as opt
from .errors import ApiError
from .http_io import read_body
from .live_config import LiveConfig
from .openai_options import bad
from .openai_request import parse_json
from .store import Query, Store, StoreError, StoreRefused

log = logging.getLogger("bonsai_tenant")
T = TypeVar("T")
MAX_LIMIT = 100
_METADATA_PARAM = re.compile(r"metadata\[([^\]]+)\]")


async def call(fn: Callable[..., T], *args: Any, what: str = "the tenant database did not answer") -> T:
    """`fn(*args)` in a worker thread; a StoreError is logged and answered as a JSON 503 (a value the
    database refused as data is a 400: the client's input, not an outage)."""
    try:
        return await run_in_threadpool(fn, *args)
    except StoreRefused as exc:
        request_id = secrets.token_hex(6)
        log.warning("request %s: %s", request_id, exc)
        raise ApiError(400, f"the database refused a value of this request (request {request_id})",
                       code="invalid_value") from exc
    except StoreError as exc:
        request_id = secrets.token_hex(6)
        log.error("request %s: %s", request_id, exc)
        raise ApiError(503, f"{what}; the server log has the details (request {request_id})",
                       type="server_error", code="database_unavailable") from exc


def not_found(completion_id: str) -> ApiError:
    return ApiError(404, f"no stored completion {completion_id!r} (send store=true to keep one)", code="not_found")


def _only(params: QueryParams, allowed: tuple[str, ...], metadata: bool = False) -> None:
    for name in params:
        if name not in allowed and not (metadata and _METADATA_PARAM.fullmatch(name)):
            raise bad(f"{name}: not a parameter of this list (use {', '.join(allowed)}"
                      f"{' or metadata[KEY]' if metadata else ''})", name)


def _paging(params: QueryParams) -> tuple[str | None, int, str]:
    """(after, limit, order) from the query string; a 400 naming a bad one."""
    limit_text = params.get("limit", "20")
    if not (limit_text.isdigit() and 1 <= int(limit_text) <= MAX_LIMIT):
        raise bad(f"limit: must be an integer between 1 and {MAX_LIMIT}, got {limit_text!r}", "limit")
    order = params.get("order", "asc")
    if order not in ("asc", "desc"):
        raise bad(f"order: must be asc or desc, got {order!r}", "order")
    after = params.get("after") or None
    return None if after is None else opt.storable(after, "after"), int(limit_text), order


def _list_body(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {"object": "list", "data": items, "first_id": items[0]["id"] if items else None,
            "last_id": items[-1]["id"] if items else None, "has_more": has_more}


def list_query(params: QueryParams) -> Query:
    """`GET /v1/chat/completions`'s query: after, limit, order, model, metadata[KEY]=VALUE."""
    _only(params, ("after", "limit", "order", "model"), metadata=True)
    after, limit, order = _paging(params)
    pairs = []
    for name, value in params.multi_items():
        match = _METADATA_PARAM.fullmatch(name)
        if match:
            pairs.append((opt.storable(match.group(1), name, f"{name} (its key)"), opt.storable(value, name)))
    model = params.get("model") or None
    return Query(after, limit, order, None if model is None else opt.storable(model, "model"), tuple(pairs))


def routes(config: LiveConfig, store: Store) -> list[Route]:
    """The stored-completion routes, bound to the server's tenants and store."""

    async def list_completions(request: Request) -> Response:
        tenant = config.authenticate(request.headers.get("authorization"))
        query = list_query(request.query_params)
        page = await call(store.page, tenant.name, query)
        if page is None:
            raise ApiError(404, f"after: no stored completion {query.after!r}", param="after", code="not_found")
        return JSONResponse(_list_body(page.items, page.has_more))

    def caller(request: Request) -> tuple[str, str]:
        """(the calling tenant's name, the completion id in the path)."""
        tenant = config.authenticate(request.headers.get("authorization")).name
        return tenant, opt.storable(request.path_params["completion_id"], "completion_id")

    async def owned(fn: Callable[..., Any], tenant: str, completion_id: str, *args: Any) -> Any:
        """`fn(tenant, completion_id, *args)`; 404 when this tenant has no completion of that id."""
        result = await call(fn, tenant, completion_id, *args)
        if result is None or result is False:
            raise not_found(completion_id)
        return result

    async def get_completion(request: Request) -> Response:
        tenant, completion_id = caller(request)
        _only(request.query_params, ())
        return JSONResponse(await owned(store.get, tenant, completion_id))

    async def get_messages(request: Request) -> Response:
        tenant, completion_id = caller(request)
        _only(request.query_params, ("after", "limit", "order"))
        after, limit, order = _paging(request.query_params)
        found = await owned(store.messages, tenant, completion_id)
        messages = [{"id": f"{completion_id}-{i}", **m} for i, m in enumerate(found)]
        if order == "desc":
            messages.reverse()
        if after is not None:
            ids = [m["id"] for m in messages]
            if after not in ids:
                raise ApiError(404, f"after: no message {after!r} in this completion", param="after",
                               code="not_found")
            messages = messages[ids.index(after) + 1:]
        return JSONResponse(_list_body(messages[:limit], len(messages) > limit))

    async def update_completion(request: Request) -> Response:
        tenant, completion_id = caller(request)
        body = parse_json(await read_body(request, config.limits.max_body_bytes))
        for key in sorted(set(body) - {"metadata"}):
            raise bad(f"{key}: only metadata can be updated", key)
        if "metadata" not in body:
            raise bad("metadata: required (the new metadata; null clears it)", "metadata")
        return JSONResponse(await owned(store.update_metadata, tenant, completion_id, opt.metadata(body["metadata"])))

    async def delete_completion(request: Request) -> Response:
        tenant, completion_id = caller(request)
        await owned(store.delete, tenant, completion_id)
        return JSONResponse({"object": "chat.completion.deleted", "id": completion_id, "deleted": True})

    return [
        Route("/v1/chat/completions", list_completions, methods=["GET"]),
        Route("/v1/chat/completions/{completion_id}", get_completion, methods=["GET"]),
        Route("/v1/chat/completions/{completion_id}", update_completion, methods=["POST"]),
        Route("/v1/chat/completions/{completion_id}", delete_completion, methods=["DELETE"]),
        Route("/v1/chat/completions/{completion_id}/messages", get_messages, methods=["GET"]),
    ]
