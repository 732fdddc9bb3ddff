"""The model's lane alone (issue 21.3): round-robin by tenant and a share of the line each, with the bugs it prevents."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest
from bonsai_tenant.scheduler import Lane, QueueFull


async def serve_order(lane: Lane, arrivals: list[str]) -> list[str]:
    """Each arrival asks for a turn, in order, while the first holds the model; the order they got it."""
    order: list[tuple[int, str]] = []
    finish = [asyncio.Event() for _ in arrivals]

    async def ask(i: int, tenant: str) -> None:
        async with lane.turn(tenant):
            order.append((i, tenant))
            await finish[i].wait()

    tasks = []
    for i, tenant in enumerate(arrivals):
        tasks.append(asyncio.create_task(ask(i, tenant)))
        await asyncio.sleep(0)  # in the line (or holding the model) before the next one arrives
    for k in range(len(arrivals)):
        while len(order) <= k:
            await asyncio.sleep(0)
        finish[order[k][0]].set()  # the holder's turn ends: the lane hands the model on
    await asyncio.gather(*tasks)
    return [tenant for _, tenant in order]


def fair_order(arrivals: list[str]) -> list[str]:
    return asyncio.run(serve_order(Lane(queue_size=16, tenants=2), arrivals))


BURST = ["acme"] * 6 + ["globex"]  # acme's burst, then one globex request while acme's first runs
TWO_ROUNDS = ["acme"] * 4 + ["globex"] * 2


def test_a_burst_waits_behind_the_other_tenants_request_and_turns_alternate():
    assert fair_order(BURST) == ["acme", "globex", "acme", "acme", "acme", "acme", "acme"]
    assert fair_order(TWO_ROUNDS) == ["acme", "globex", "acme", "globex", "acme", "acme"]


def test_mutation_a_served_tenant_that_keeps_its_place_is_caught(monkeypatch):
    """Inject a bug: a tenant is not sent to the back of the round once served."""
    monkeypatch.setattr(Lane, "_served", lambda self, tenant: None)
    assert fair_order(TWO_ROUNDS) == ["acme", "globex", "globex", "acme", "acme", "acme"]


def test_mutation_a_newcomer_at_the_back_of_the_round_is_caught(monkeypatch):
    """Inject a bug: a tenant never served joins the round behind those already served (first come)."""
    monkeypatch.setattr(Lane, "_enqueue", lambda self, tenant, waiter: self.waiting.setdefault(tenant, deque())
                        .append(waiter))
    assert fair_order(BURST).index("globex") == 2


def admitted(lane: Lane, tenants: list[str]) -> list[str]:
    """Who of `tenants`, arriving in order while the model is busy and nobody leaves, gets a place."""
    lane.busy = True
    loop = asyncio.new_event_loop()
    placed = []
    for tenant in tenants:
        try:
            lane.admit(tenant)
        except QueueFull as refused:
            assert refused.status == 429 and refused.retry_after >= 1
            continue
        lane.waiting.setdefault(tenant, deque()).append(loop.create_future())
        placed.append(tenant)
    loop.close()
    return placed


def test_one_tenant_holds_at_most_its_share_of_the_line_so_the_other_still_gets_in():
    assert admitted(Lane(queue_size=4, tenants=2), ["acme"] * 5 + ["globex"] * 3) == ["acme"] * 2 + ["globex"] * 2


def test_mutation_without_shares_a_burst_would_lock_the_other_tenant_out():
    lane = Lane(queue_size=4, tenants=2)
    lane.share = lane.queue_size  # inject the bug: no per-tenant share
    assert admitted(lane, ["acme"] * 5 + ["globex"] * 3) == ["acme"] * 4


@pytest.mark.parametrize("queue_size, tenants, share", [(8, 2, 4), (8, 3, 3), (1, 5, 1), (16, 0, 16)])
def test_the_share_is_the_line_over_the_tenants_at_least_one(queue_size, tenants, share):
    assert Lane(queue_size, tenants).share == share
