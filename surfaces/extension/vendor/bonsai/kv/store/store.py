"""GPU driver of `store.wgsl`: write f32 K/V rows from model buffers into the cache's row formats."""

from __future__ import annotations

import math
from typing import Any

from ...gpu.limits import grid
from ...gpu.params import ParamCache, f32_literal
from ..format.modes import MODES, Mode, get_mode
from ..format.rows import FORMATS, RowFormat, format_constants


def k_limit(f: RowFormat) -> float:
    """|x| at or above which rows kept in f32 for later quantisation to `f` could not be (the store
    kernel flags them): 65520 for asymmetric formats (the f16 min), else 7 * 65520 (the 4-bit scale)."""
    return 65520.0 if f.asym else 7 * 65520.0


class Store:
    """Records the store kernel for one (n_kv_heads, head_dim, mode); grouped K is stored as f32."""

    def __init__(self, gpu: Any, n_kv: int, head_dim: int, mode: str | Mode, params: ParamCache | None = None):
        m = get_mode(mode) if isinstance(mode, str) else mode
        self.gpu, self.n_kv, self.head_dim, self.mode = gpu, n_kv, head_dim, m
        self.k_words, self.v_words = m.k_store.row_words(head_dim), m.v_store.row_words(head_dim)
        self.row_words = self.k_words  # K rows; V rows follow the K block (see store.wgsl)
        self.params = params or ParamCache(gpu)
        # f32 rows are copied by a workgroup per row (`main_f32`); rows to rotate or quantise are quantised
        # by one (`main_rows`)
        self.f32_rows = m.k_store.bits == 32 and m.v_store.bits == 32 and not m.rotate_k
        # grouped K: the per-channel scale (and min) must fit f16; a V residual: the same for V (0: no limit)
        self.k_limit = k_limit(m.kf) if m.grouped else 0.0
        self.v_limit = k_limit(m.vf) if m.v_residual else 0.0
        self.kernel, self.kernel_also = (gpu.kernel(
            __package__, "store.wgsl", entry="main_f32" if self.f32_rows else "main_rows", HEAD_DIM=head_dim, N_KV=n_kv,
            ROTATE_K=m.rotate_k, ALSO=also,
            INV_SQRT_HD=f32_literal(1.0 / math.sqrt(head_dim)),
            K_LIMIT=f"{self.k_limit:.1f}", V_LIMIT=f"{self.v_limit:.1f}",
            **format_constants("K", m.k_store, head_dim), **format_constants("V", m.v_store, head_dim),
        ) for also in (False, self.f32_rows))
        self._spares = (gpu.buffer(16), gpu.buffer(16))  # dst2 and d2 where nothing is copied twice

    def record(self, k_buf: Any, v_buf: Any, n: int, dst: Any, dst_word: int, flags: Any, flag_base: int,
               src_pos: int = 0, also: tuple[Any, Any] | None = None, params: Any = None,
               src_word: int | None = None) -> None:
        """Rows of positions src_pos..src_pos+n-1 of k_buf/v_buf -> dst (K block then V block), flags.

        src_word: the rows start at this word of k_buf/v_buf instead (of src_pos's rows).
        also=(buffer, words), f32 rows only: the same words into `buffer` too, K rows from word words[0]
        and V rows from words[1] on (`words`: a buffer of u32 x 4, a per-step parameter).
        params: a buffer already holding (n, dst_word, flag_base, src_word) (a step parameter), else cached."""
        rows = 2 * n * self.n_kv
        if params is None:
            word = src_pos * self.n_kv * self.head_dim if src_word is None else src_word
            params = self.params.get(n, dst_word, flag_base, word)
        if not self.f32_rows:
            if also is not None:
                raise ValueError("Store.record(also=...): only f32 rows are copied twice")
            self.gpu.dispatch(self.kernel, [params, k_buf, v_buf, dst, flags], grid(rows))
            return
        kernel, (dst2, d2) = (self.kernel, self._spares) if also is None else (self.kernel_also, also)
        self.gpu.dispatch(kernel, [params, k_buf, v_buf, dst, flags, dst2, d2], grid(rows))


class GroupStore:
    """Records `group.wgsl`: full groups of f32 K rows -> c4 / c4a rows (per-channel scales), and with a V residual
    (`v_rows`) the same positions' f32 V rows -> q4a rows, in the same dispatch."""

    def __init__(self, gpu: Any, n_kv: int, head_dim: int, params: ParamCache | None = None, fmt: str = "c4",
                 v_rows: str | None = None):
        self.gpu, self.n_kv, self.head_dim = gpu, n_kv, head_dim
        self.fmt = FORMATS[fmt]
        self.group = self.fmt.group
        self.row_words = self.fmt.row_words(head_dim)
        if v_rows is not None and v_rows != "q4a":
            raise ValueError(f"GroupStore(v_rows={v_rows!r}): group.wgsl quantises V rows to q4a only")
        self.v_rows = v_rows is not None
        self.params = params or ParamCache(gpu)
        # (group.wgsl's STAGED_IS_SRC: a batch's rows quantised from staging into staging, one binding for both)
        self.kernel, self.kernel_in_src = (gpu.kernel(
            __package__, "group.wgsl", HEAD_DIM=head_dim, N_KV=n_kv, GROUP=self.group, ROW_WORDS=self.row_words,
            ASYM=self.fmt.asym, V_ROWS=self.v_rows, STAGED_IS_SRC=same) for same in (False, True))
        self._spare = gpu.buffer(16)  # the unused `staged` binding of kernel_in_src

    def record(self, src: Any, src_word: int, dst: Any, dst_word: int, staged: Any, staged_k: int,
               params: Any = None, groups: int = 1, v_src: int = 0, v_dst: int = 0, staged_v: int = 0) -> None:
        """`groups` consecutive groups of f32 rows [group, n_kv, hd] at src word src_word -> grouped rows at dst word
        dst_word (each group as a dispatch of its own would quantise it), and the same words into `staged` from word
        staged_k on; with `v_rows`, the f32 V rows from src word v_src on -> q4a rows from dst word v_dst on (and
        from staged word staged_v on).

        params: a buffer already holding (src_word, dst_word, v_src, v_dst) (a step parameter), else cached; the
        staged words are a parameter cached by value."""
        if params is None:
            params = self.params.get(src_word, dst_word, v_src, v_dst)
        staged_params = self.params.get(staged_k, staged_v, 0, 0)
        kernel, staged = (self.kernel_in_src, self._spare) if staged is src else (self.kernel, staged)
        # a workgroup per KV head and group, for its K (and one for its V rows)
        self.gpu.dispatch(kernel, [params, src, dst, staged, staged_params], (self.n_kv, groups, 2 if self.v_rows else 1))


__all__ = ["MODES", "Store"]
