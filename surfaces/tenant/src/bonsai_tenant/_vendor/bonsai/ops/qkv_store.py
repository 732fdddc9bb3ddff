"""The fused QKV matmul of one decode token with the KV store in its epilogue (matmul_kv.wgsl, `main_kv`).

The K and V rows (after RoPE) go straight to the KV cache's staging area and window slot (or residual)
with their validity flags, as the store kernel would write them: one dispatch fewer per layer. The cache
says where (`KVRows`, made by `KVCache.epilogue_rows`); this module only records the dispatch.
"""

from __future__ import annotations

import struct
from typing import Any, Protocol

from . import matmul as mm

BUFFERS = 10  # storage buffers main_kv binds: above WebGPU's default of 8, so only where the adapter allows


class KVRows(Protocol):
    """Where one position's f32 K/V rows go (words count u32; the cache's `EpilogueRows`)."""

    staging: Any  # the staging buffer: K rows from word `word`, then V rows
    word: int
    flags: Any  # the flag buffer: 2 * n_kv flags from word `flag`, 2 * n_kv scratch words from `scratch`
    flag: int
    scratch: int
    dst: Any  # the window slot or the f32 residual
    dst_words: Any  # a step-parameter buffer: (K word, V word) in `dst`
    k_limit: float  # flag 2 at |x| >= this (0: none)
    v_limit: float


def fuses(gpu: Any, m: mm.QMatrix, t: int, head_dim: int, n1: int) -> bool:
    """Whether `dispatch` applies: one token on the buffer kernel with RoPE fused, an adapter with 10 storage
    buffers per stage, and a workgroup's rows inside one head (its flag words are shared by the head)."""
    rows = mm.WG // m.decode_lanes
    return (t == 1 and gpu.limits.max_storage_buffers >= BUFFERS and mm.fuses_rope(m, 1, head_dim)
            and head_dim % rows == 0 and n1 % rows == 0)


def params(m: mm.QMatrix, dim: int, n1: int, n2: int, eps: float, rows: KVRows) -> bytes:
    """main_kv's parameter block: `m.params` for one token (words 0-10), then the staging word, the flag
    and scratch words and the K and V limits (words 11-15)."""
    head = m.params(1, dim, 0, n1=n1, n2=n2, eps=eps)[:44]
    return head + struct.pack("<3I2f", rows.word, rows.flag, rows.scratch, rows.k_limit, rows.v_limit)


def dispatch(gpu: Any, m: mm.QMatrix, x: Any, q: Any, prm: Any, rows: KVRows, *, norm: Any,
             rope: tuple[Any, int]) -> None:
    """Record Q -> q and the K/V rows -> `rows` for one token of x; `prm` holds `params(...)`; norm: the RMSNorm
    weights fused in front (or None), rope: (rope.wgsl's parameter block, head_dim)."""
    spare = mm.spare_buffers(gpu)
    kernel = mm.kernel(gpu, m, 1, entry="main_kv", out=mm.OUT_SPLIT, norm=norm is not None, rope_hd=rope[1])
    buffers = [m.buf, x, q, prm, rows.staging, rows.dst, spare[2] if norm is None else norm, rope[0], rows.flags,
               rows.dst_words]
    gpu.dispatch(kernel, buffers, (-(-m.rows // (mm.WG // m.decode_lanes)), 1))
