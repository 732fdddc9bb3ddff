"""Parameter words without numpy: f32 bit patterns and little-endian u32 packing for GPU uploads."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import cast


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
