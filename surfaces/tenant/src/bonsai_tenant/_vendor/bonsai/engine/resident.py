"""Greedy decoding in blocks of GPU-resident steps, the next block recorded while the last one is read back.

A block is `Engine.resident_steps` decode steps recorded back to back: each step embeds the id the last
step's argmax left on the GPU and parks its KV rows there (`KVCache.park`); one readback at the end brings
the block's ids and rows to the host. With `Engine.blocks_ahead` = 1 the next block is recorded and
submitted before that readback is waited for, so the GPU is not idle while the host maps the read, commits
the rows to its master and streams the tokens (bench/NOTES.md, commit c0f6f87). A stop inside a block then
costs up to one block more of wasted steps, which the engine rewinds exactly as it rewinds the rest of a
block; so CPU adapters, whose "GPU" is the same cores, default to 0.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..gpu.backend import GpuBackend
from ..kv.api import KVCacheAPI
from .forward import GpuModel
from .recovery import LossWatch, is_device_lost

T = TypeVar("T")


class BlockHost(Protocol):
    """What a run of resident blocks needs of the engine that owns it (`Engine` is one)."""

    gpu: GpuBackend
    cache: KVCacheAPI
    model: GpuModel
    pos: int
    fed: list[int]
    resident_steps: int
    blocks_ahead: int
    max_positions: int
    _watch: LossWatch

    def rewind(self, pos: int) -> None: ...

    def recover(self) -> float: ...

    def with_recovery(self, run: Callable[[], T], after: Callable[[], None] | None = None) -> T: ...


@dataclass
class Block:
    """A block recorded and submitted, its readback on the way."""

    start: int  # position of its first step
    n: int  # steps
    sync: Any  # the cache's `SyncInFlight`: its rows and ids


class ResidentBlocks:
    """Blocks of resident steps for one greedy run of at most `budget` steps; `take` gives each block's ids.

    `before(i)` runs before step i (numbered from the `index` of the first `take`) is recorded. The
    caller ends the run with `close`, which commits a block still in flight and says how many steps it
    held (decoded past what was taken: the caller rewinds them)."""

    def __init__(self, engine: BlockHost, budget: int, before: Callable[[int], None], ahead: int | None = None) -> None:
        self.engine, self.budget, self.before = engine, budget, before
        self.ahead = engine.blocks_ahead if ahead is None else ahead
        self.in_flight: Block | None = None

    @property
    def steps_in_flight(self) -> int:
        """Steps recorded past the ids taken so far."""
        return self.in_flight.n if self.in_flight is not None else 0

    def take(self, tok: int, index: int) -> list[int]:
        """The ids of the next block, whose first step decodes from `tok` (the last id taken, or the
        prompt's) as step `index`; with `ahead` the block after it is recorded before this one is read.
        A device loss re-runs from the host master, exact up to this block's start, so the ids are those
        of an uninterrupted run."""
        e = self.engine
        start = self.in_flight.start if self.in_flight is not None else e.pos
        budget = self.budget + self.steps_in_flight

        def run() -> tuple[Block, bytes]:
            block = self.in_flight or self._launch(tok, index)
            if block is None:
                raise ValueError("ResidentBlocks.take: no step is left in the budget or the cache")
            self.in_flight = self._launch(None, index + block.n) if self.ahead else None
            raw = block.sync.finish()
            e._watch.check()  # reads may return zeros rather than raise on a lost device
            return block, raw

        def start_over() -> None:  # the host master is exact up to `start`: the block runs again from there
            e.rewind(start)
            self.budget, self.in_flight = budget, None

        try:
            block, raw = e.with_recovery(run, start_over)
        except BaseException:  # refused rows (NonFiniteKVError), a second loss: the master ends at `start`
            self.in_flight = None
            e.rewind(start)
            raise
        out = list(struct.unpack(f"<{block.n}I", raw[4: 4 * (1 + block.n)]))
        e.fed[block.start:] = [tok, *out[:-1]]
        return out

    def _launch(self, tok: int | None, index: int) -> Block | None:
        """Record a block from self.engine.pos (its first step embeds `tok`, or with None the id the last
        block left on the GPU) and start its readback; None when no step is left to run."""
        e = self.engine
        n = min(e.resident_steps, self.budget, e.max_positions - e.pos)
        if n <= 0:
            return None
        e._watch.check()
        token = e.model.act.token
        if tok is not None:
            e.gpu.write(token, array("I", [tok]))
        start = e.pos
        for j in range(n):
            self.before(index + j)
            e.model.record([0], start + j, all_logits=False, from_token=True, hist=j, park=True)
        sync = e.cache.sync_host_soon(also=(token, 4 * (1 + n)))
        e.pos, self.budget = start + n, self.budget - n
        return Block(start, n, sync)

    def close(self) -> int:
        """Commit the block still in flight (its rows reach the host master); the steps it held."""
        block, self.in_flight = self.in_flight, None
        if block is None:
            return 0
        e = self.engine
        try:
            block.sync.finish()
        except Exception as exc:
            if not is_device_lost(e.gpu, exc):
                e.rewind(block.start)  # its rows were refused: the master ends at its start
                raise
            e.recover()  # the master is exact up to the block's start, where the caller rewinds to
        return block.n
