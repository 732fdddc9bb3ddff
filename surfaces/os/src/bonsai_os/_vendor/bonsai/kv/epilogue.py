"""Where one position's K/V rows go when the QKV matmul's epilogue stores them (`KVCache.epilogue_rows`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .staging import Entry


@dataclass(frozen=True)
class EpilogueRows:
    """The destinations store.wgsl's `main_f32` with ALSO would write (bonsai.ops.qkv_store.KVRows), and the
    staging entry booked for them; words count u32."""

    entry: Entry
    staging: Any  # staging buffer: K rows from `word`, then V rows
    word: int
    flags: Any  # staging's flag buffer: the rows' flags from `flag`, scratch words from `scratch`
    flag: int
    scratch: int
    dst: Any  # the window slot, or (grouped K with a V residual) the layer's f32 residual
    dst_words: Any  # step parameter: (K word, V word) in `dst`
    k_limit: float  # flag 2 at |x| >= this (0: none): store.wgsl's K_LIMIT / V_LIMIT
    v_limit: float
