"""Cutting attention windows into fold dispatches: the loop budget, the span one dispatch covers, the pieces."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...gpu.limits import MAX_GROUPS
from ..errors import KVError
from .window import Window

# Decode steps dispatch a window's blocks rounded up to a multiple of this many (`fold_shape`): the extra
# workgroups return at once, and a step's tape replays until its window outgrows them, so decoding
# re-records a step every FOLD_PAD blocks instead of every block (~4 ms of Python on the H200 each).
FOLD_PAD = 8
# Loop iterations one invocation may run. Mesa's llvmpipe (lavapipe, the CPU Vulkan driver; up to at
# least Mesa 22.3) counts every iteration of every loop in a shader invocation against one counter and
# silently leaves all loops once it reaches 65535 (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS): no adapter
# limit reports it. A fold dispatch that ran longer computed wrong attention past ~500 positions there.
# So one dispatch folds at most `Attention.max_span` positions, and longer windows are cut into pieces.
LOOP_BUDGET = 65535


class Pieces:
    """How `Attention` cuts windows into fold dispatches within the loop budget, and sizes each dispatch."""

    # set by Attention.__init__
    gpu: Any
    variant: str
    block: int
    head_dim: int
    n_heads: int
    fold_floats: int
    combines: bool
    _loop_blocks_cached: dict[bool, int]

    def _fused_for(self, n_q: int) -> tuple[Any, Any] | None:
        """The fold_merge kernels a call of n_q query tokens takes, or None (`Attention._fused_for`)."""
        raise NotImplementedError

    def fold_shape(self, win: Window, n_q: int = 1) -> int:
        """What of window `win` sizes its fold dispatches for n_q query tokens (beyond n_q): blocks -> the
        blocks it touches, for one-token steps (the ones a tape replays) rounded up to a multiple of FOLD_PAD
        within the blocks one dispatch may span (blocks.wgsl: workgroups past the window's blocks return at
        once); serial -> nothing (0)."""
        if self.variant != "blocks":
            return 0
        blocks = -(-win.end // self.block) - win.start // self.block
        if n_q != 1:
            return blocks
        return max(blocks, min(-(-blocks // FOLD_PAD) * FOLD_PAD, self.max_span(n_q) // self.block))

    def max_span(self, n_q: int) -> int:
        """The most positions one fold dispatch covers for n_q query tokens; `pieces` cuts longer windows.

        serial: an invocation loops head_dim / 2 + 2 times per position (the dot product with K, the
        update of acc, four dimensions each), which must stay under LOOP_BUDGET. blocks: an invocation folds one block, but
        the merge loops about once per block of the dispatch (`merge_loops`; in fold_merge after a block's
        fold), the blocks of a dispatch are one workgroup dimension (<= MAX_GROUPS), and the counters and
        block folds (`_part`) must fit one storage binding.
        """
        if self.variant == "serial":  # two loops of head_dim / 4 per position (four dimensions at a time)
            per_position, fixed = self.head_dim // 2 + 4, self.head_dim + 64
            return max(1, (LOOP_BUDGET - fixed) // per_position)
        part_row = n_q * self.n_heads * self.fold_floats * 4  # bytes of one block's folds
        room = (self.gpu.max_binding_bytes - 4 * n_q * self.n_heads) // part_row
        blocks = min(MAX_GROUPS, self._loop_blocks(self._fused_for(n_q) is not None), room)
        if blocks < 1:
            raise KVError(f"blocks attention: one block's folds for {n_q} tokens x {self.n_heads} heads "
                          f"({part_row} bytes) exceed this adapter's maxStorageBufferBindingSize "
                          f"({self.gpu.max_binding_bytes} bytes); use fewer tokens per step")
        return blocks * self.block

    def merge_loops(self, blocks: int) -> int:
        """Loop iterations one invocation of merge.wgsl runs for a window of `blocks` blocks: per round of
        ROUND blocks, the round itself, its loads eight at a time, the rest one at a time, and the merge."""
        per_round = min(self.head_dim, 2048 // self.head_dim)
        loops = 0
        for r0 in range(0, blocks, per_round):
            cnt = min(per_round, blocks - r0)
            loops += 1 + cnt // 8 + cnt % 8 + cnt
        return loops

    def _loop_blocks(self, fused: bool) -> int:
        """The most blocks one dispatch's merge may cover within LOOP_BUDGET, after (`fused`: fold_merge) one
        block's fold: at most every score and V load of BLOCK positions one iteration per value, generously."""
        cached = self._loop_blocks_cached.get(fused)
        if cached is None:
            fold = 4 * (self.block + self.head_dim) + 64 if fused else 64
            lo, hi = 1, MAX_GROUPS
            while lo < hi:  # the largest count whose loops fit (merge_loops grows with blocks)
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if self.merge_loops(mid) + fold <= LOOP_BUDGET else (lo, mid - 1)
            cached = self._loop_blocks_cached[fused] = lo
        return cached

    def pieces(self, windows: list[Window], n_q: int) -> list[Window]:
        """`windows` cut at the multiples of `max_span(n_q)` inside them (absolute positions).

        The state carries the fold from one dispatch to the next, so folding the pieces one after the
        other gives the same bits as one dispatch over the window (the invariant). Cutting at absolute
        multiples keeps a blocks-variant piece within span / BLOCK blocks. Where the main kernel folds
        residual rows (`combines`), a residual piece becomes one of its windows, joined to the quantised
        piece just before it when both lie within one span: one fold and one merge for both.
        """
        span = self.max_span(n_q)
        out: list[Window] = []
        for w in windows:
            cuts = range(w.start - w.start % span + span, w.end, span)
            edges = [w.start, *cuts, w.end]
            for a, b in zip(edges, edges[1:], strict=False):
                piece = dataclasses.replace(w, start=a, end=b) if cuts else w
                if not (self.combines and piece.residual):
                    out.append(piece)
                elif out and self._joins(out[-1], piece, span):
                    out[-1] = dataclasses.replace(out[-1], end=piece.end, res=piece.k, res_start=piece.start,
                                                  res_v_off=piece.v_off)
                else:  # the residual alone, still through the main kernel (all its positions from res_start on)
                    out.append(dataclasses.replace(piece, residual=False, res=piece.k, res_start=piece.buf_base,
                                                   res_v_off=piece.v_off))
        return out

    @staticmethod
    def _joins(prev: Window, res: Window, span: int) -> bool:
        """Whether residual piece `res` can join the quantised piece `prev` in one window: `prev` ends where
        the residual's rows start and both lie within one span."""
        if res.k is not res.v or res.k_off:
            raise KVError("attention: a V-residual window must hold K then V rows of one buffer from word 0")
        return (prev.res is None and not prev.residual and prev.end == res.start == res.buf_base
                and prev.start // span == (res.end - 1) // span)
