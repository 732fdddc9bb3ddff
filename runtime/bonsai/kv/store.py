"""GPU driver of `store.wgsl`: write f32 K/V rows from model buffers into the cache format."""

from __future__ import annotations

from typing import Any

import numpy as np

from .params import ParamCache
from .quant4 import row_words

MODES = ("f32", "q4", "q4r")


class Store:
    """Records the store kernel for one (n_kv_heads, head_dim, mode)."""

    def __init__(self, gpu: Any, n_kv: int, head_dim: int, mode: str, params: ParamCache | None = None):
        if mode not in MODES:
            raise ValueError(f"KV mode must be one of {MODES}, got {mode!r}")
        self.gpu, self.n_kv, self.head_dim, self.mode = gpu, n_kv, head_dim, mode
        self.row_words = row_words(head_dim, mode)
        self.params = params or ParamCache(gpu)
        self.kernel = gpu.kernel(
            "bonsai.kv", "store.wgsl", HEAD_DIM=head_dim, N_KV=n_kv, ROW_WORDS=self.row_words,
            Q4=mode != "f32", ROTATE_K=mode == "q4r", INV_SQRT_HD=_f32_literal(1.0 / np.sqrt(head_dim)),
        )

    def record(self, k_buf: Any, v_buf: Any, n: int, dst: Any, dst_word: int, flags: Any, flag_base: int,
               src_pos: int = 0) -> None:
        """Rows of positions src_pos..src_pos+n-1 of k_buf/v_buf -> dst (K rows then V rows), flags."""
        rows = 2 * n * self.n_kv
        params = self.params.get(n, dst_word, flag_base, src_pos)
        self.gpu.dispatch(self.kernel, [params, k_buf, v_buf, dst, flags], ((rows + 63) // 64,))


def _f32_literal(x: float) -> str:
    """A WGSL literal that parses to exactly f32(x)."""
    return f"bitcast<f32>({int(np.float32(x).view(np.uint32))}u)"
