"""Kernel parameter blocks: u32 words (f32 as bits) in small buffers that are reused, not rewritten mid-pass.

`Gpu.write` submits the open pass, so writing parameters between dispatches would split a batch.
Two caches avoid it. `ParamCache` gives every distinct content its own immutable buffer, created
before recording starts (or the first time it is seen) and bound as-is afterwards. `StepParams`
keeps one buffer per *role* instead (the query position, the newest window's end, the row a new
K/V lands in change every decode step) and rewrites it only when its words differ from the last
write, so bind groups stay cached and a step prepared before recording (`KVCache.prepare`) records
without any write splitting its pass. A rewrite is `Gpu.write`, ordered after every dispatch
recorded so far: correct at any time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, cast


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


class StepParams:
    """One small buffer per role; `get(role, *words)` returns it holding exactly `words`."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._bufs: dict[tuple, tuple[Any, tuple[int, ...]]] = {}
        self.rewrites = 0  # writes since creation (a decode step should cost a few, not one per layer)

    def get(self, role: tuple, *words: int | float) -> Any:
        """The role's buffer, rewritten first if it does not hold `words` (ints as u32, floats as f32 bits)."""
        key = param_key(words)
        entry = self._bufs.get(role)
        if entry is None:
            buf = self.gpu.upload(pack_u32(key))
            self._bufs[role] = (buf, key)
            return buf
        buf, held = entry
        if held != key:
            if len(held) != len(key):
                raise ValueError(f"step parameter role {role!r} changed size ({len(held)} -> {len(key)} words)")
            self.gpu.write(buf, pack_u32(key))
            self._bufs[role] = (buf, key)
            self.rewrites += 1
        return buf
