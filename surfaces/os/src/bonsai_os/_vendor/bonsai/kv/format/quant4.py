"""The 4-bit KV row format: numpy reference quantiser, dequantiser and packing (the kernels' oracle).

Per row of `head_dim` f32 values x (head_dim a multiple of 8):

    amax  = max |x|                                   (f32, exact)
    scale = f16(amax / 7)                             round-to-nearest-even of the EXACT quotient
    s     = f32(scale)
    raw_j = 8                                         if s == 0 (all-zero / tiny row: no division)
          = clamp(round(x_j / s) + 8, 0, 15)          otherwise
    x'_j  = (raw_j - 8) * s                           (exact in f32)

`round()` is round-half-to-even of the EXACT quotient x_j / s. We specify the exact quotient, not
an f32-rounded one, because WGSL division is not correctly rounded (2.5 ulp allowed; real GPUs
use it): the kernel decides every rounding with products that are exact in f32 (an f16 scale has
11 significant bits), so any device gives these bits. In numpy the f64 quotient never crosses a
tie or an f16 midpoint that the exact one does not reach, so `np.rint(f64)` / `astype(float16)`
compute the same thing.

Rows holding NaN/inf, or with amax/7 >= 65520 (the scale would round to f16 infinity), are
rejected (NonFiniteKVError) before anything is cached.

Packing: value j goes to u32 word j // 8, bits 4*(j % 8) .. +3 (little-endian: byte j // 2, the
even value in the low nibble). Then one u32 slot with the scale's f16 bits in its low 16 bits.
"""

from __future__ import annotations

import numpy as np

from ..errors import NonFiniteKVError

F16_SCALE_LIMIT = 7 * 65520.0  # amax at or above this rounds the scale to f16 infinity


def row_words(head_dim: int, mode: str) -> int:
    """u32 words per stored row of `head_dim` values in `mode` ("f32", "q4" or "q4r")."""
    if mode == "f32":
        return head_dim
    if head_dim % 8:
        raise ValueError(f"4-bit rows need head_dim % 8 == 0, got {head_dim}")
    return head_dim // 8 + 1


def check_finite(x: np.ndarray, what: str = "K/V rows") -> None:
    """Raise NonFiniteKVError naming the first bad row of `x` ([..., head_dim])."""
    bad = ~np.isfinite(x)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NonFiniteKVError(f"{what}: non-finite value {x[idx]} at index {idx}; refusing to cache it")


def quantise(x: np.ndarray, what: str = "K/V rows") -> tuple[np.ndarray, np.ndarray]:
    """(raw nibbles uint8 [..., hd], scale float16 [...]) of f32 rows `x` [..., hd]."""
    x = np.asarray(x, dtype=np.float32)
    check_finite(x, what)
    amax = np.max(np.abs(x), axis=-1)
    if (amax >= F16_SCALE_LIMIT).any():
        idx = tuple(int(i) for i in np.argwhere(amax >= F16_SCALE_LIMIT)[0])
        raise NonFiniteKVError(
            f"{what}: row {idx} has max |x| = {amax[idx]}, beyond the 4-bit format's f16 scale "
            f"(< {F16_SCALE_LIMIT}); refusing to cache it"
        )
    scale = (amax.astype(np.float64) / 7.0).astype(np.float16)
    s = scale.astype(np.float64)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s > 0, np.rint(x.astype(np.float64) / np.where(s > 0, s, 1.0)), 0.0)
    raw = np.clip(q + 8, 0, 15).astype(np.uint8)
    return raw, scale


def dequantise(raw: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """f32 values `(raw - 8) * scale` (exact in f32)."""
    return (raw.astype(np.float32) - 8.0) * scale.astype(np.float32)[..., None]


def pack(raw: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """u32 rows [..., hd/8 + 1]: nibble words then the scale slot (see module docstring)."""
    hd = raw.shape[-1]
    nib = raw.reshape(*raw.shape[:-1], hd // 8, 8).astype(np.uint32)
    words = np.zeros(nib.shape[:-1], np.uint32)
    for i in range(8):
        words |= nib[..., i] << np.uint32(4 * i)
    slot = scale.astype(np.float16).view(np.uint16).astype(np.uint32)
    return np.concatenate([words, slot[..., None]], axis=-1)


def unpack(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of `pack`: (raw uint8 [..., hd], scale float16 [...])."""
    words = rows[..., :-1].astype(np.uint32)
    nib = np.stack([(words >> np.uint32(4 * i)) & np.uint32(15) for i in range(8)], axis=-1)
    raw = nib.reshape(*words.shape[:-1], words.shape[-1] * 8).astype(np.uint8)
    scale = (rows[..., -1] & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    return raw, scale


def encode(x: np.ndarray, mode: str, what: str = "K/V rows") -> np.ndarray:
    """Rows `x` [..., hd] f32 as stored u32 words [..., row_words] in `mode` (rotation not applied)."""
    x = np.asarray(x, dtype=np.float32)
    if mode == "f32":
        check_finite(x, what)
        return np.ascontiguousarray(x).view(np.uint32)
    return pack(*quantise(x, what))


def decode(rows: np.ndarray, mode: str) -> np.ndarray:
    """Stored u32 rows back to the f32 values attention reads."""
    if mode == "f32":
        return np.ascontiguousarray(rows).view(np.float32)
    return dequantise(*unpack(rows))
