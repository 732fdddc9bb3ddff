"""Norm vectors as f32 bytes: GGML rows dequantised in pure Python (the kernels read norms as f32).

Bit-identical to the reference `bonsai.reference.quants.dequantize_raw`: every weight is an f16 scale
times a small integer (plus an f16 min for Q4_1), which is exact in f32, and d * q + m of f16 values
is exact in a Python float (all are multiples of 2**-24 below 2**21), so packing to f32 rounds once.
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

from ..ops.qtypes import QType

_F16 = struct.Struct("<e")


def _half(raw: memoryview, at: int) -> float:
    return float(_F16.unpack_from(raw, at)[0])


def _block(raw: memoryview, at: int, q: QType) -> list[float]:
    """The `q.block` weights of the block at byte `at`."""
    d = _half(raw, at)
    if q.name == "Q4_0":
        qs = raw[at + 2 : at + 18]
        return [(float(b & 0xF) - 8.0) * d for b in qs] + [(float(b >> 4) - 8.0) * d for b in qs]
    if q.name == "Q4_1":
        m, qs = _half(raw, at + 2), raw[at + 4 : at + 20]
        return [float(b & 0xF) * d + m for b in qs] + [float(b >> 4) * d + m for b in qs]
    if q.name == "Q8_0":
        return [float(b) * d for b in struct.unpack_from("<32b", raw, at + 2)]
    # Q1_0: weight j is bit j % 8 of byte j // 8 (LSB first); 1 -> +d, 0 -> -d
    return [d if (b >> j) & 1 else -d for b in raw[at + 2 : at + 18] for j in range(8)]


def f32_bytes(data: Any, q: QType) -> bytes:
    """f32 bytes (native order: little-endian on every target) of the GGML blocks in `data` (bytes-like)."""
    raw = memoryview(data).cast("B")
    if q.name == "F32":
        return bytes(raw)
    if q.name == "F16":
        return array("f", (v for (v,) in _F16.iter_unpack(raw))).tobytes()
    if q.name not in ("Q4_0", "Q4_1", "Q8_0", "Q1_0"):
        raise ValueError(f"no pure-Python dequantisation for {q.name}")
    out = array("f")
    for at in range(0, len(raw), q.nbytes):
        out.extend(_block(raw, at, q))
    return out.tobytes()
