"""What a chat request costs: its tokens held against the tenant's quota before it runs, and settled
to the tokens actually processed and generated however it ends (finished, client gone, timed out,
failed, its completion not storable), so every generated token is counted and no quota is passed.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio

from .errors import ApiError
from .http_io import cancel
from .openai_request import ChatRequest
from .openai_response import Completion
from .quota import QuotaExceeded, never_fits
from .store import Hold, Store
from .stored_api import call
from .tenants import Tenant

log = logging.getLogger("bonsai_tenant")
SETTLE_WAIT = 10.0  # seconds a cancelled turn is given to stop before its counts are read


def prompt_size(events: Any, req: ChatRequest) -> int:
    """The prompt's tokens: the backend's count when its turn tells it (RuntimeBackend's Turn), else
    an upper bound, the UTF-8 bytes of the messages and tools as JSON (a byte-level count)."""
    size = getattr(events, "prompt_size", None)
    if isinstance(size, int):
        return size
    return len(json.dumps([req.messages, req.tools], ensure_ascii=False).encode("utf-8", "surrogatepass"))


async def reserve(store: Store, tenant: Tenant, req: ChatRequest, events: Any) -> Hold:
    """Hold prompt + max_tokens of the tenant's quota for this request (a 429 when they do not fit in
    what is left today, a 400 when they exceed the whole quota, a 503 when the database fails). The
    turn is stopped before it starts when the request is refused."""
    need = prompt_size(events, req) + req.max_tokens
    quota = tenant.daily_token_quota
    try:
        if quota is not None and need > quota:
            raise never_fits(tenant.name, quota, need)
        hold = await call(store.reserve, tenant.name, req.model, need, quota)
        if not hold.admitted:
            raise QuotaExceeded(tenant.name, quota or 0, hold.charged, need, store.now())
    except BaseException:
        cancel(events)
        raise
    return hold


async def spent(events: Any, completion: Completion, hold: Hold) -> tuple[int, int]:
    """(prompt, completion) tokens the turn used: the backend's Finish when it came; else the counts
    of a turn that tells them (once its work has stopped); else, from a backend that tells nothing,
    everything the request held."""
    if completion.finished:
        return completion.finish.prompt_tokens, completion.finish.completion_tokens
    finished = getattr(events, "finished", None)
    if finished is not None and hasattr(events, "completion_tokens"):
        await anyio.to_thread.run_sync(finished.wait, SETTLE_WAIT)
        return int(events.prompt_tokens), int(events.completion_tokens)
    return 0, hold.tokens


async def settle(store: Store, hold: Hold, req: ChatRequest, completion: Completion, events: Any,
                 keep: bool) -> None:
    """Count what the request used and release the rest of its hold; with `keep` (a finished turn of a
    store=true request) the completion is kept in the same transaction. Runs to its end even when the
    request is being cancelled. A database failure is a 503 ApiError (the usage is still counted when
    only keeping the completion failed)."""
    with anyio.CancelScope(shield=True):
        prompt, generated = await spent(events, completion, hold)
        stored = (completion.to_dict(), req.sent_messages, req.metadata) if keep else None
        await call(store.settle, hold, prompt, generated, stored,
                   what="the tenant database did not answer, so the reply was not recorded and is withheld")


async def settle_quietly(store: Store, hold: Hold, req: ChatRequest, completion: Completion, events: Any) -> None:
    """`settle` without keeping anything, for a request already failing: a database failure is only logged."""
    try:
        await settle(store, hold, req, completion, events, keep=False)
    except ApiError as exc:
        log.error("a request's usage could not be counted: %s", exc.message)
