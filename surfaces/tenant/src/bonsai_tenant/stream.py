"""A streamed chat turn as server-sent events, its usage settled however the stream ends."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from starlette.types import Receive, Scope, Send

from .billing import settle, settle_quietly
from .errors import ApiError
from .events import Event
from .http_io import GONE, TIMEOUT, drive, error_response, internal_error, timeout_error
from .openai_request import ChatRequest
from .openai_response import Completion, sse
from .scheduler import Lane
from .store import Hold, Store

log = logging.getLogger("bonsai_tenant")


class EventStream:
    """Errors before the first event stay HTTP errors; after it, any failure (the model's, the
    database's, the server's own) is one error event without the server's details, then `[DONE]`.
    The request's hold is settled in every case, a client that hangs up mid-stream included: what
    was generated for it is counted."""

    def __init__(self, store: Store, req: ChatRequest, events: Iterator[Event], lane: Lane, tenant: str,
                 deadline: float, timeout: float, request_id: str, hold: Hold) -> None:
        self.store, self.req, self.events, self.lane, self.tenant = store, req, events, lane, tenant
        self.deadline, self.timeout, self.request_id, self.hold = deadline, timeout, request_id, hold

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        req = self.req
        completion = Completion(req.model, logprobs=req.logprobs is not None)
        started = settled = False

        async def body(data: bytes, more: bool = True) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": more})

        async def begin() -> None:
            nonlocal started
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream; charset=utf-8"),
                                    (b"cache-control", b"no-cache")]})
            started = True
            await body(sse(completion.first_chunk()))

        async def emit(event: Event) -> None:
            chunk = completion.add(event)
            if chunk is not None:
                await body(sse(chunk))

        try:
            error: ApiError | None = None
            try:
                outcome = await drive(self.events, self.lane, self.tenant, self.deadline, receive, emit, begin)
                if outcome == TIMEOUT:
                    error = timeout_error(self.timeout)
            except ApiError as exc:
                outcome, error = "", exc
            except Exception:
                log.exception("request %s: generation failed mid-stream", self.request_id)
                outcome, error = "", internal_error(self.request_id, "generation failed")
            if outcome == GONE:
                return  # nobody reads on; the hold is settled below
            settled = True
            if error is None:
                try:
                    await settle(self.store, self.hold, req, completion, self.events, keep=req.store)
                except ApiError as exc:
                    error = exc
            else:
                await settle_quietly(self.store, self.hold, req, completion, self.events)
            if error is not None and not started:
                await error_response(error)(scope, receive, send)
                return
            if error is not None:
                await body(sse(error.body()) + sse("[DONE]"), more=False)
                return
            await body(sse(completion.last_chunk()))
            if req.include_usage:
                await body(sse(completion.usage_chunk()))
            await body(sse("[DONE]"), more=False)
        except Exception:
            if not started:
                raise
            log.exception("request %s: the stream failed after its first byte", self.request_id)
            try:
                await body(sse(internal_error(self.request_id).body()) + sse("[DONE]"), more=False)
            except Exception:  # noqa: BLE001 - the client is gone: nothing more can reach it
                pass
        finally:
            if not settled:
                await settle_quietly(self.store, self.hold, req, completion, self.events)
