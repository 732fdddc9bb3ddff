"""Who runs next on a model: one turn at a time, waiting turns served round-robin by tenant, a bounded line.

A tenant may hold at most its share of the waiting places (the queue size over the number of
tenants, at least one), so one tenant's burst is refused (429) before it can fill the line, and
whenever the model frees up the tenant served longest ago (or never) goes next: a burst cannot starve anyone.
Runs on the server's event loop (asyncio); a waiter that is cancelled (client gone, time limit)
leaves the line, or hands the model on if it had just been given it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .errors import ApiError


class QueueFull(ApiError):
    """The model's waiting line (or this tenant's share of it) is full: 429 with Retry-After."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(429, message, type="rate_limit_error", code="queue_full")
        self.retry_after = retry_after


class Lane:
    """One model's turn-taking. `async with lane.turn(tenant):` waits for the model, then holds it."""

    def __init__(self, queue_size: int, tenants: int) -> None:
        self.queue_size = queue_size
        self.share = max(1, math.ceil(queue_size / max(1, tenants)))
        self.busy = False
        # tenant -> its waiters, least recently served tenant first
        self.waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self.mean_seconds = 5.0  # moving average of a turn's length, for Retry-After

    def queued(self, tenant: str | None = None) -> int:
        if tenant is not None:
            return len(self.waiting.get(tenant, ()))
        return sum(len(q) for q in self.waiting.values())

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the turns ahead of a newcomer, at their usual length."""
        return max(1, min(600, math.ceil(self.mean_seconds * (self.queued() + 1) / 2)))

    def admit(self, tenant: str) -> None:
        """Raise QueueFull unless `tenant` may take a place in the line now."""
        if not self.busy and not self.queued():
            return
        if self.queued() >= self.queue_size:
            raise QueueFull(f"the model is busy and its queue is full ({self.queue_size} waiting); retry later",
                            self.retry_after())
        if self.queued(tenant) >= self.share:
            raise QueueFull(f"this tenant already has {self.share} requests waiting for the model (its share of "
                            "the queue); retry later", self.retry_after())

    @asynccontextmanager
    async def turn(self, tenant: str) -> AsyncIterator[None]:
        """Wait (fairly) until the model is free, hold it for the body of the `async with`."""
        self.admit(tenant)
        if self.busy or self.queued():
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._enqueue(tenant, waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._hand_on()  # the model was just given to us: pass it on
                else:
                    self._forget(tenant, waiter)
                raise
        else:
            self.busy = True
            self._served(tenant)
        started = time.monotonic()
        try:
            yield
        finally:
            self.mean_seconds = 0.8 * self.mean_seconds + 0.2 * (time.monotonic() - started)
            self._hand_on()

    def _enqueue(self, tenant: str, waiter: asyncio.Future[None]) -> None:
        """`waiter` joins its tenant's line; a tenant never served yet goes before every tenant that was."""
        if tenant not in self.waiting:
            self.waiting[tenant] = deque()
            self.waiting.move_to_end(tenant, last=False)
        self.waiting[tenant].append(waiter)

    def _served(self, tenant: str) -> None:
        """`tenant` just got the model: it goes to the back of the round."""
        self.waiting.setdefault(tenant, deque())
        self.waiting.move_to_end(tenant)

    def _forget(self, tenant: str, waiter: asyncio.Future[None]) -> None:
        line = self.waiting.get(tenant)
        if line is not None and waiter in line:
            line.remove(waiter)

    def _hand_on(self) -> None:
        """Give the model to the first waiter of the tenant served longest ago, or mark it free."""
        for tenant, line in list(self.waiting.items()):
            while line:
                waiter = line.popleft()
                if not waiter.done():
                    self._served(tenant)
                    waiter.set_result(None)
                    return
        self.busy = False
