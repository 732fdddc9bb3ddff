"""The HTTP edges of a chat request: a body read up to a limit, and a turn driven to its end or its stop.

`drive` waits for the model (the lane), then pulls the turn's events in worker threads while it
watches the connection and the clock: a client that hangs up, or a request past its time limit,
cancels the turn, which stops the generation at its next check, and frees the model at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive

from .errors import ApiError
from .events import Event
from .scheduler import Lane

GONE, TIMEOUT, DONE = "gone", "timeout", "done"


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, or a 413 as soon as it is known to pass `limit` bytes (before reading it when
    Content-Length says so)."""
    too_large = ApiError(413, f"request body is larger than this server's limit of {limit} bytes",
                         code="request_too_large")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _next(events: Iterator[Event]) -> Event | None:
    return next(events, None)


def cancel(events: Iterator[Event]) -> None:
    """Stop a backend's turn: its `cancel()` if it has one (RuntimeBackend's Turn), else `close()`."""
    stop = getattr(events, "cancel", None) or getattr(events, "close", None)
    if stop is not None:
        try:
            stop()
        except ValueError:  # a generator running in its worker thread: it stops at its next event
            pass


async def drive(events: Iterator[Event], lane: Lane, tenant: str, deadline: float, receive: Receive,
                emit: Callable[[Event], Awaitable[None]], on_turn: Callable[[], Awaitable[None]]) -> str:
    """Run one turn: DONE when every event went to `emit`, GONE when the client left, TIMEOUT when the
    deadline passed. `on_turn` runs once the model is ours, before the first event."""
    outcome = DONE
    failure: Exception | None = None
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal outcome
            while (await receive())["type"] != "http.disconnect":
                pass
            outcome = GONE
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            with anyio.move_on_after(max(0.0, deadline - time.monotonic())) as timer:
                async with lane.turn(tenant):
                    await on_turn()
                    while True:
                        event = await anyio.to_thread.run_sync(_next, events, abandon_on_cancel=True)
                        if event is None:
                            break
                        await emit(event)
            if timer.cancelled_caught:
                outcome = TIMEOUT
        except Exception as exc:  # noqa: BLE001 - raised below, once the watcher is stopped
            failure = exc
        group.cancel_scope.cancel()
    cancel(events)
    if failure is not None:
        raise failure
    return outcome


def timeout_error(seconds: float) -> ApiError:
    return ApiError(504, f"the request took longer than this server's limit of {seconds:g} s and was stopped",
                    type="server_error", code="timeout")


def internal_error(request_id: str, what: str = "the request failed") -> ApiError:
    """A 500 that says nothing of the server's inside (paths, exception texts): the log has those."""
    return ApiError(500, f"{what}; the server log has the details (request {request_id})",
                    type="server_error", code="internal_error")


def retry_headers(error: Any) -> dict[str, str]:
    return {"Retry-After": str(error.retry_after)} if hasattr(error, "retry_after") else {}


def error_response(error: ApiError) -> JSONResponse:
    """The error as its JSON response (WWW-Authenticate on a 401, Retry-After when it has one)."""
    headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else retry_headers(error)
    return JSONResponse(error.body(), status_code=error.status, headers=headers or None)
