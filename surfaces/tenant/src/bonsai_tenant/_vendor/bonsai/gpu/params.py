"""Kernel parameter blocks: u32 words (f32 as bits) in small buffers that are reused, not rewritten mid-pass.

`Gpu.write` submits the open pass, so writing parameters between dispatches would split a batch.
Two caches avoid it. `ParamCache` gives every distinct content its own immutable buffer, created
before recording starts (or the first time it is seen) and bound as-is afterwards. `StepParams`
keeps one slot per *role* instead (the query position, the newest window's end, the row a new
K/V lands in change every decode step), bound as a range of a shared arena buffer, and rewrites it
only when its words differ from the last write, so bind groups stay cached.

A forward step that calls `begin_step` gets one of two sets of slots by its position's parity, so
consecutive decode steps alternate, and the parameters it writes inside `deferred()` before recording
(`KVCache.prepare`, the model's RoPE rows and argmax slot) go out as one queue write that submits
nothing: no dispatch waiting in the open pass binds that set (the last step's bind the other one; the
step before that was submitted, or `begin_step` submits it). So a GPU-resident decode step costs one
write and no submit of its own, where it cost ~7 writes and a submit (each write ~6 us of wgpu-core, each
submit an encoder, a pass and wgpu's per-submission work: bench/NOTES.md, commit 667f03c). Any other rewrite
is `Gpu.write`, ordered after every dispatch recorded so far: correct at any time.
"""
from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterable, Iterator
from typing import Any, cast

from .backend import BufferRange, round_up


def f32_bits(x: float) -> int:
    """The u32 bit pattern of f32(x) (round to nearest even, as numpy's float32 cast)."""
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def param_key(words: Iterable[int | float]) -> tuple[int, ...]:
    """Words as u32: ints as they are, floats as their f32 bits."""
    words = tuple(words)
    if float not in map(type, words):  # the common case (every dispatch's parameters): nothing to convert
        return cast(tuple[int, ...], words)
    return tuple(f32_bits(w) if isinstance(w, float) else int(w) for w in words)


def pack_u32(words: tuple[int, ...] | list[int]) -> bytes:
    """Little-endian u32 bytes of `words` (what a WGSL array<u32> reads)."""
    return struct.pack(f"<{len(words)}I", *words)


def f32_literal(x: float) -> str:
    """A WGSL literal that parses to exactly f32(x)."""
    return f"bitcast<f32>({f32_bits(x)}u)"


class ParamCache:
    """Buffers keyed by their u32 content; at most `limit` kept (oldest dropped first)."""

    def __init__(self, gpu: Any, limit: int = 4096) -> None:
        self.gpu = gpu
        self.limit = limit
        self._bufs: dict[tuple[int, ...], Any] = {}
        self._blocks: dict[bytes, Any] = {}

    def block(self, data: bytes) -> Any:
        """The buffer holding `data`, a kernel's own packed parameter block (e.g. `matmul.params(...)`)."""
        buf = self._blocks.get(data)
        if buf is None:
            if len(self._blocks) >= self.limit:
                self._blocks.pop(next(iter(self._blocks)))
            buf = self._blocks[data] = self.gpu.upload(data)
        return buf

    def get(self, *words: int | float) -> Any:
        """The buffer holding `words` (ints as u32, floats as f32 bits)."""
        key = param_key(words)
        buf = self._bufs.get(key)
        if buf is None:
            if len(self._bufs) >= self.limit:
                self._bufs.pop(next(iter(self._bufs)))
            buf = self.gpu.upload(pack_u32(key))
            self._bufs[key] = buf
        return buf


SLOT_ALIGN = 256  # bytes: the largest minStorageBufferOffsetAlignment WebGPU allows, so any adapter takes it
ARENA_BYTES = 16 << 10  # one arena holds 64 roles of up to 256 bytes; more roles open another arena
SETS = 2  # sets of slots that steps alternate between (`StepParams.begin_step`)


class _Arena:
    """One buffer of role slots and its host copy; `dirty` is the byte span changed since the last write."""

    def __init__(self, gpu: Any, nbytes: int) -> None:
        self.buffer = gpu.buffer(nbytes)
        self.host = bytearray(nbytes)
        self.used = 0
        self.dirty: tuple[int, int] | None = None

    def mark(self, lo: int, hi: int) -> None:
        self.dirty = (lo, hi) if self.dirty is None else (min(self.dirty[0], lo), max(self.dirty[1], hi))


class StepParams:
    """Slots per role in shared arena buffers; `get(role, *words)` returns the role's slot in the current set
    (a `BufferRange`) holding exactly `words`. Inside `deferred()` rewrites wait and leave as one write per
    arena when it ends."""

    def __init__(self, gpu: Any, arena_bytes: int = ARENA_BYTES) -> None:
        self.gpu = gpu
        self.arena_bytes = arena_bytes
        self.current = 0  # the set of slots `get` answers from (steps alternate: `begin_step`)
        self._arenas: list[list[_Arena]] = [[] for _ in range(SETS)]
        self._roles: dict[tuple, tuple[BufferRange, _Arena, bytes]] = {}  # (role, set) -> slot
        self._left_at: list[int | None] = [None] * SETS  # gpu.submits when each set stopped being current
        self._step_dispatches: int | None = None  # gpu.dispatch_count at the last `begin_step`
        self._deferring = 0
        self._deferred_at = 0  # gpu.dispatch_count when the outermost deferral began
        self.rewrites = 0  # writes since creation (a decode step should cost one, not one per role)
        self.unsubmitted_writes = 0  # of them, writes that submitted nothing (`deferred` after `begin_step`)

    def begin_step(self, pos: int) -> None:
        """A new forward step from position `pos`: answer from set pos % SETS (consecutive decode steps
        alternate; a step at a given position binds the same slots each time, so the warm-up's steps make the
        bind groups a request's steps at those positions use). Submits first if a dispatch recorded while
        that set was last current may still wait in the open pass (no submit since then)."""
        nxt = pos % SETS
        self._left_at[self.current] = self.gpu.submits
        if self._left_at[nxt] == self.gpu.submits:  # (always so for the set just left: a step at pos's parity again)
            self.gpu.flush()
        self.current = nxt
        self._step_dispatches = self.gpu.dispatch_count

    def get(self, role: tuple, *words: int | float) -> BufferRange:
        """The role's slot, rewritten first if it does not hold `words` (ints as u32, floats as f32 bits)."""
        return self.get_bytes(role, pack_u32(param_key(words)))

    def get_bytes(self, role: tuple, data: bytes) -> BufferRange:
        """The role's slot, rewritten first if it does not hold `data` (a kernel's packed block)."""
        key = (role, self.current)
        entry = self._roles.get(key)
        if entry is None:
            return self._new_slot(key, data)
        slot, arena, held = entry
        if held != data:
            if len(held) != len(data):
                raise ValueError(f"step parameter role {role!r} changed size ({len(held)} -> {len(data)} bytes)")
            arena.host[slot.offset: slot.offset + len(data)] = data
            self._roles[key] = (slot, arena, data)
            arena.mark(slot.offset, slot.offset + len(data))
            if not self._deferring:
                self._write(arena, submit=True)
        return slot

    def _new_slot(self, key: tuple, data: bytes) -> BufferRange:
        """A slot for a role seen for the first time in this set: no recorded dispatch binds its bytes yet, so
        they are written without submitting the pass (as `upload` makes a buffer)."""
        size = max(16, round_up(len(data), 16))
        if size > self.arena_bytes:
            raise ValueError(f"step parameter role {key[0]!r}: {len(data)} bytes, above an arena's {self.arena_bytes}")
        arenas = self._arenas[self.current]
        if not arenas or arenas[-1].used + size > self.arena_bytes:
            arenas.append(_Arena(self.gpu, self.arena_bytes))
        arena = arenas[-1]
        slot = BufferRange(arena.buffer, arena.used, size)
        arena.used = round_up(arena.used + size, SLOT_ALIGN)
        arena.host[slot.offset: slot.offset + len(data)] = data
        self._roles[key] = (slot, arena, data)
        self.gpu.initialise(arena.buffer, data, slot.offset)
        return slot

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Rewrites inside wait and go out as one write per arena at the end: without a submit when this
        step's set has had no dispatch since `begin_step`. Nothing may be dispatched inside (it would bind
        words the write has not brought yet): that raises RuntimeError."""
        if not self._deferring:
            self._deferred_at = self.gpu.dispatch_count
        self._deferring += 1
        failed = True
        try:
            yield
            failed = False
        finally:
            self._deferring -= 1
            if not self._deferring:
                self._end_deferral(failed)

    def _end_deferral(self, failed: bool) -> None:
        dispatched = self.gpu.dispatch_count != self._deferred_at
        fresh = not dispatched and self._step_dispatches == self.gpu.dispatch_count
        for index, arenas in enumerate(self._arenas):
            for arena in arenas:
                if arena.dirty is not None:  # (written on failure too: the host copy already holds the words)
                    self._write(arena, submit=not (fresh and index == self.current))
        if dispatched and not failed:
            raise RuntimeError("StepParams.deferred: a dispatch was recorded while step parameters waited to be "
                               "written")

    def _write(self, arena: _Arena, submit: bool) -> None:
        """The arena's changed span to the GPU: `Gpu.write` (after everything recorded), or with submit=False
        `Gpu.initialise` (no dispatch in the open pass binds those bytes)."""
        assert arena.dirty is not None
        lo, hi = arena.dirty
        lo, hi = lo - lo % 4, round_up(hi, 4)
        arena.dirty = None
        data = bytes(arena.host[lo:hi])
        if submit:
            self.gpu.write(arena.buffer, data, lo)
        else:
            self.gpu.initialise(arena.buffer, data, lo)
            self.unsubmitted_writes += 1
        self.rewrites += 1
