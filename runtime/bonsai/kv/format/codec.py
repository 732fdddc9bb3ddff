"""Numpy reference of every KV row format (f32, 8/4-bit per row or per block, 4-bit per channel): the kernels' oracle.

Row formats (one K or V row of `hd` f32 values; stored as u32 words):

    f32     hd words, the f32 bits.
    q8      bits 8, one scale per row:     hd/4 value words + 1 scale word
    q4      bits 4, one scale per row:     hd/8 value words + 1 scale word   (the seed's format)
    q4b     bits 4, one scale per 32 values: hd/8 value words + hd/64 scale words (Q4_0-like)
    q4a     bits 4, asymmetric per row: hd/8 value words + 1 word (scale low half, min high half)
    c4      bits 4, one scale per CHANNEL per group of G=32 positions (K only, see below)
    c4a     bits 4, asymmetric per channel per group of G=64 positions (scale and min per channel)

Per scale block of values x (a whole row, or 32 consecutive values; qmax = 2^(bits-1) - 1):

    amax  = max |x|                                  (f32, exact)
    scale = f16(amax / qmax)                         round-to-nearest-even of the EXACT quotient
    s     = f32(scale)
    raw_j = off                                      if s == 0 (off = 2^(bits-1): 8 or 128)
          = clamp(round(x_j / s) + off, 0, 2 off - 1)  otherwise, round = half-to-even of the exact quotient
    x'_j  = (raw_j - off) * s                        (exact in f32)

Values are stored offset-binary (unsigned raw, `off` = the zero): value j of a row lives in word
j // (32/bits), bits bits*(j % (32/bits)) and up (little-endian bytes, low nibble first). Scale b
of the row (block b) is an f16 in word value_words + b // 2, low half for even b, zero-filled.
Every rounding is of an EXACT quotient, not an f32-rounded one, because WGSL division is not
correctly rounded (2.5 ulp allowed; real GPUs use it): the kernels decide every rounding with
products that are exact in f32 (an f16 scale has 11 significant bits), so any device gives these
bits; in numpy the f64 quotient never crosses a tie or an f16 midpoint that the exact one does
not reach, so `np.rint(f64)` / `astype(float16)` compute the same thing.

c4 (per-channel K, after KIVI): positions are grouped by absolute position, G = 32 per group.
Within a group, channel d of KV head h has one scale over the G values K[p, h, d]; the group's
row i (position group_start + i) holds its own hd/8 nibble words, then hd/(2G) scale words
holding the f16 scales of channels i*hd/G .. (i+1)*hd/G - 1 (two per word, low half first).
So a c4 row has hd/8 + hd/64 words (G = 32; hd a multiple of 64) and a group is G whole rows:
windows aligned to groups carry their scales with them. A group is quantised once, when its last
position is appended; until then its rows are kept in f32 (the residual).

Asymmetric (q4a per row, c4a per channel over its group), codes 0..15, every step exact or one
correctly rounded f32 operation (the same in numpy and WGSL):

    mn    = f16(min x)                               round-to-nearest-even (f32 -> f16 is exact RNE)
    d     = f32(max x - f32(mn))                     one correctly rounded f32 subtraction
    scale = f16(d / 15)                              RNE of the exact quotient (0 if d is not a normal f32)
    e_j   = f32(x_j - f32(mn))
    raw_j = 0 if s == 0 else clamp(round(e_j / s), 0, 15)
    x'_j  = f32(raw_j * s) + f32(mn)                 (the product is exact)

c4a rows: hd/8 nibble words, then hd/64 words; row i of a 64-position group carries channels
i*hd/64 .. (i+1)*hd/64 - 1, one word each: the scale's f16 bits low, the min's high.

Rows with NaN/inf, or whose scale would round to f16 infinity (amax >= qmax * 65520; asymmetric:
|min| >= 65520 or max - min >= 15 * 65520), are rejected (NonFiniteKVError) before anything is cached.
"""

from __future__ import annotations

import numpy as np

from ..errors import NonFiniteKVError
from .modes import Mode
from .rotate import hadamard
from .rows import FORMATS, GROUP, RowFormat

__all__ = ["FORMATS", "GROUP", "RowFormat", "check_finite", "decode", "encode", "k_view", "pack_rows", "roundtrip",
           "store_rows", "unpack_rows"]


def check_finite(x: np.ndarray, what: str = "K/V rows") -> None:
    """Raise NonFiniteKVError naming the first bad value of `x` ([..., head_dim])."""
    bad = ~np.isfinite(x)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NonFiniteKVError(f"{what}: non-finite value {x[idx]} at index {idx}; refusing to cache it")


def _scales(amax: np.ndarray, qmax: int, what: str) -> np.ndarray:
    limit = qmax * 65520.0
    if (amax >= limit).any():
        idx = tuple(int(i) for i in np.argwhere(amax >= limit)[0])
        raise NonFiniteKVError(f"{what}: block {idx} has max |x| = {amax[idx]}, beyond the f16 scale "
                               f"(< {limit}); refusing to cache it")
    return (amax.astype(np.float64) / qmax).astype(np.float16)


def _round(x: np.ndarray, scale: np.ndarray, qmax: int) -> np.ndarray:
    """raw offset-binary values of x given the broadcastable f16 scale."""
    s = scale.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s > 0, np.rint(x.astype(np.float64) / np.where(s > 0, s, 1.0)), 0.0)
    return np.clip(q + qmax + 1, 0, 2 * qmax + 1).astype(np.uint32)


def quantise_asym(x: np.ndarray, axis: int, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(raw u32 like x, scale f16, min f16) of x, one (scale, min) per slice along `axis` (see module doc)."""
    lo, hi = x.min(axis=axis, keepdims=True), x.max(axis=axis, keepdims=True)
    with np.errstate(over="ignore"):
        mn = lo.astype(np.float16)
    mf = mn.astype(np.float32)
    d = hi - mf  # f32, correctly rounded
    if (np.abs(lo) >= 65520).any() or (d >= 15 * 65520.0).any():
        raise NonFiniteKVError(f"{what}: a block spans beyond the asymmetric f16 scale and min; refusing to cache it")
    scale = np.where(d >= np.float32(2.0**-126), (d.astype(np.float64) / 15.0), 0.0).astype(np.float16)
    s = scale.astype(np.float64)
    e = (x - mf).astype(np.float64)  # f32 subtraction, then exact widening
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s > 0, np.rint(e / np.where(s > 0, s, 1.0)), 0.0)
    raw = np.clip(q, 0, 15).astype(np.uint32)
    return raw, np.squeeze(scale, axis), np.squeeze(mn, axis)


def quantise_rows(x: np.ndarray, fmt: RowFormat, what: str = "K/V rows") -> tuple[np.ndarray, np.ndarray]:
    """(raw u32 [..., hd], scales f16 [..., hd/block]) of f32 rows x (per-row or per-block formats)."""
    x = np.asarray(x, np.float32)
    check_finite(x, what)
    hd = x.shape[-1]
    if fmt.asym:
        raw, scale, mn = quantise_asym(x, -1, what)
        return raw, np.stack([scale, mn], axis=-1)
    b = fmt.block_size(hd)
    xb = x.reshape(*x.shape[:-1], hd // b, b)
    scale = _scales(np.abs(xb).max(axis=-1), fmt.qmax, what)
    raw = _round(xb, scale[..., None], fmt.qmax).reshape(x.shape)
    return raw, scale


def quantise_group(x: np.ndarray, what: str = "K rows", asym: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """c4: (raw u32 [G, n_kv, hd], scales f16 [n_kv, hd]) of one full group x [G, n_kv, hd];
    c4a (asym): scales are [n_kv, hd, 2] (scale, min)."""
    x = np.asarray(x, np.float32)
    check_finite(x, what)
    if asym:
        raw, scale, mn = quantise_asym(x, 0, what)
        return raw, np.stack([scale, mn], axis=-1)
    scale = _scales(np.abs(x).max(axis=0), 7, what)
    return _round(x, scale[None], 7), scale


def _pack_values(raw: np.ndarray, bits: int) -> np.ndarray:
    per = 32 // bits
    v = raw.reshape(*raw.shape[:-1], raw.shape[-1] // per, per).astype(np.uint32)
    words = np.zeros(v.shape[:-1], np.uint32)
    for i in range(per):
        words |= v[..., i] << np.uint32(bits * i)
    return words


def _unpack_values(words: np.ndarray, bits: int) -> np.ndarray:
    per, mask = 32 // bits, np.uint32((1 << bits) - 1)
    v = np.stack([(words >> np.uint32(bits * i)) & mask for i in range(per)], axis=-1)
    return v.reshape(*words.shape[:-1], words.shape[-1] * per)


def _pack_f16(scale: np.ndarray, n_words: int) -> np.ndarray:
    h = scale.astype(np.float16).view(np.uint16).astype(np.uint32)
    if h.shape[-1] % 2:
        h = np.concatenate([h, np.zeros((*h.shape[:-1], 1), np.uint32)], axis=-1)
    h = h.reshape(*h.shape[:-1], n_words, 2)
    return h[..., 0] | (h[..., 1] << np.uint32(16))


def _unpack_f16(words: np.ndarray, n: int) -> np.ndarray:
    h = np.stack([words & np.uint32(0xFFFF), words >> np.uint32(16)], axis=-1)
    h = h.reshape(*words.shape[:-1], 2 * words.shape[-1])
    return h[..., :n].astype(np.uint16).view(np.float16)


def encode(x: np.ndarray, fmt: str | RowFormat, what: str = "K/V rows") -> np.ndarray:
    """Rows x [..., hd] f32 as stored u32 words [..., row_words] (c4: x is [n*G, n_kv, hd], whole groups)."""
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    x = np.asarray(x, np.float32)
    if f.bits == 32:
        check_finite(x, what)
        return np.ascontiguousarray(x).view(np.uint32)
    hd = x.shape[-1]
    f.check(hd)
    if f.per_channel:
        return _encode_groups(x, f, what)
    return pack_rows(*quantise_rows(x, f, what), f)


def pack_rows(raw: np.ndarray, scale: np.ndarray, fmt: str | RowFormat) -> np.ndarray:
    """Stored u32 rows [..., row_words] of per-row/per-block codes `raw` [..., hd] and f16 `scale` [..., blocks]."""
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    return np.concatenate([_pack_values(raw, f.bits), _pack_f16(scale, f.scale_words(raw.shape[-1]))], axis=-1)


def unpack_rows(rows: np.ndarray, fmt: str | RowFormat) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of `pack_rows`: (codes u32 [..., hd], f16 scales [..., blocks])."""
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    hd = _hd_of(rows.shape[-1], f)
    vw = f.value_words(hd)
    return _unpack_values(rows[..., :vw], f.bits), _unpack_f16(rows[..., vw:], hd // f.block_size(hd))


def _encode_groups(x: np.ndarray, f: RowFormat, what: str) -> np.ndarray:
    n, n_kv, hd = x.shape
    G = f.group
    if n % G:
        raise ValueError(f"{f.name} encodes whole groups of {G} positions, got {n}")
    out = [np.zeros((0, n_kv, f.row_words(hd)), np.uint32)]
    for g in range(0, n, G):
        raw, scale = quantise_group(x[g: g + G], what, f.asym)  # scale [n_kv, hd] (asym: [n_kv, hd, 2])
        per_row = scale.reshape(n_kv, G, -1).transpose(1, 0, 2)  # [G, n_kv, cpr (* 2)]
        out.append(np.concatenate([_pack_values(raw, 4), _pack_f16(per_row, f.scale_words(hd))], axis=-1))
    return np.concatenate(out)


def decode(rows: np.ndarray, fmt: str | RowFormat) -> np.ndarray:
    """Stored u32 rows back to the f32 values attention reads (c4: rows [n*G, n_kv, rw], whole groups)."""
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    rows = np.asarray(rows, np.uint32)
    if f.bits == 32:
        return np.ascontiguousarray(rows).view(np.float32)
    hd = _hd_of(rows.shape[-1], f)
    vw = f.value_words(hd)
    codes = _unpack_values(rows[..., :vw], f.bits).astype(np.float32)
    if f.asym and not f.per_channel:
        sm = _unpack_f16(rows[..., vw:], 2).astype(np.float32)
        return codes * sm[..., :1] + sm[..., 1:]
    raw = codes - np.float32(f.off)
    if f.per_channel:
        n, n_kv, _ = rows.shape
        G, cpr = f.group, hd // f.group
        per = 2 if f.asym else 1
        sc = _unpack_f16(rows[..., vw:], cpr * per).astype(np.float32)  # [n, n_kv, cpr * per]
        sc = sc.reshape(n // G, G, n_kv, cpr, per).transpose(0, 2, 1, 3, 4).reshape(n // G, 1, n_kv, hd, per)
        if f.asym:
            out = codes.reshape(n // G, G, n_kv, hd) * sc[..., 0] + sc[..., 1]
        else:
            out = raw.reshape(n // G, G, n_kv, hd) * sc[..., 0]
        return out.reshape(n, n_kv, hd)
    b = f.block_size(hd)
    sc = _unpack_f16(rows[..., vw:], hd // b).astype(np.float32)
    out = raw.reshape(*raw.shape[:-1], hd // b, b) * sc[..., None]
    return out.reshape(raw.shape)


def _hd_of(words: int, f: RowFormat) -> int:
    """head_dim from a row's word count."""
    for hd in range(8, words * 32 // f.bits + 1, 8):
        try:
            if f.row_words(hd) == words:
                return hd
        except ValueError:
            continue
    raise ValueError(f"{words} words is not a {f.name} row")


def roundtrip(x: np.ndarray, fmt: str | RowFormat) -> np.ndarray:
    """x through the format and back (per-row/per-block formats; c4 takes whole groups)."""
    return decode(encode(x, fmt), fmt)


def store_rows(mode: Mode, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K rows, V rows) exactly as the store kernel writes them (grouped K / residual V: f32; rotation applied)."""
    return encode(hadamard(k) if mode.rotate_k else k, mode.k_store), encode(v, mode.v_store)


def k_view(mode: Mode, k: np.ndarray) -> np.ndarray:
    """K as the quantiser sees it (rotated in rotating modes)."""
    return hadamard(k) if mode.rotate_k else np.asarray(k, np.float32)
