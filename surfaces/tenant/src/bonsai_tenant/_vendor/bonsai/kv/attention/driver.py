"""Driver of the windowed online-softmax attention kernels (fold per window, then finalize or merge).

`Attention.record` folds a list of windows, in increasing position order, into a state buffer
and then writes `acc / l` to the output. The invariant that makes any windowing bit-identical to
one whole-cache window is written in `serial.wgsl` (and, for the blocks variant, in
`blocks.wgsl`), where the state is kept.
"""

from __future__ import annotations

import math
from typing import Any

from ...gpu.backend import WordTexture
from ...gpu.limits import MAX_GROUPS, grid, workgroups
from ...gpu.params import ParamCache, StepParams, f32_bits, f32_literal
from ..errors import KVError
from ..format.modes import Mode, get_mode
from ..format.rows import FORMATS, decode_constants
from .mutations import NO_MUTATIONS, Mutations, split  # noqa: F401 - split: the windows the tests cut
from .pieces import FOLD_PAD, LOOP_BUDGET, Pieces  # noqa: F401 - FOLD_PAD, LOOP_BUDGET: part of this module's API
from .window import NO_RESIDUAL, Window  # noqa: F401 - NO_RESIDUAL: part of this module's API

# Two kernels of one family (same parameters, window descriptors and state layout), both keeping the
# invariant; the tests run both.
# "serial": one invocation per (token, head) folds the window's positions (serial.wgsl).
# "blocks": blocks.wgsl folds every BLOCK-position block of a window in parallel (one
# workgroup per block and (token, head)) and merges them in block order (merge.wgsl); blocks
# are aligned to absolute positions and an open block's fold is carried in the state, so the
# invariant holds for any windowing (see blocks.wgsl). A decode step's query (one token) takes one dispatch
# per window (`fold_merge`: the last workgroup of a (token, head) to finish merges); batches, adapters that
# cannot bind fold_merge's FOLD_MERGE_BUFFERS storage buffers, and FUSE_MERGE off take two (fold, then
# merge_blocks.wgsl). On the H200 fold_merge made decode 1.09-1.11x faster and a 512-token prefill 0.84-0.90x
# (bench/NOTES.md, commit cfb0926): its merge's workgroup memory leaves fewer fold workgroups per SM.
# A batch's blocks fold four tokens a workgroup (blocks.wgsl's fold_lanes; LANE_FOLD below).
VARIANTS = {"serial": "serial.wgsl", "blocks": "blocks.wgsl"}
BLOCK = 64  # positions per block of the "blocks" variant
FUSE_MERGE = True  # blocks variant: fold and merge in one dispatch where the adapter allows (read at construction)
FUSED_TOKENS = 1  # ... for calls of at most this many query tokens (decode steps)
FOLD_MERGE_BUFFERS = 10  # storage buffers blocks.wgsl's fold_merge binds
# Batches (calls of more than one query token) fold LANE_TOKENS tokens a workgroup, four dimensions an invocation
# (blocks.wgsl's fold_lanes, fold_lanes.wgsl): each position's exponentials serve four accumulators. The same bits as
# `main`, one (token, head) a workgroup, which one-token calls keep (read at each call: bench/probes/prefill_ab.py's switch).
LANE_FOLD = True
LANE_TOKENS = 4  # fold_lanes.wgsl's tile (its vec4s)
# Batches of a mode whose main kernel folds the f32 residual too (`combines`: q4res) decode each window to f32 rows
# once (decode_window.wgsl) and fold those with f32's fold_lanes: the same values summed in the same order, without
# decoding every row once per tile of four tokens in a kernel that carries the codes' paths too (read at each call).
# The same bits as folding the codes where the driver rounds k_elem's multiply-add alike in both kernels (lavapipe, CI's
# tests); NVIDIA's compiler does not (its logits of a 512-token prompt differed by up to 3.7, each path deterministic),
# and the GPU's forced decoding still equals the numpy reference (bench/NOTES.md, commits 4dd3ef3-41eb0e6). 1.07x a 512-token q4res
# prompt on the H100, 1.17x at 2,048.
DECODE_BATCHES = True


def default_variant(gpu: Any, head_dim: int = 64) -> str:
    """"serial" on CPU adapters (lavapipe: barriers are slow there), else "blocks" (bench/NOTES.md:
    on the H200 it decoded ~2x faster than the earlier one-workgroup-per-(token, head) kernel with the
    same window at 1K context, and attended ~17x faster at 32K). "serial" too where a workgroup of
    head_dim invocations (the blocks kernels') is above the adapter's limit, or head_dim is no multiple of 4
    (the blocks kernels keep the query in workgroup vectors)."""
    if gpu.is_cpu or head_dim > gpu.limits.max_invocations or head_dim % 4:
        return "serial"
    return "blocks"


class Attention(Pieces):
    """Records attention for one shape: n_heads query heads over n_kv KV heads of head_dim, `mode` rows."""

    def __init__(self, gpu: Any, n_heads: int, n_kv: int, head_dim: int, mode: str | Mode,
                 mutations: Mutations = NO_MUTATIONS, params: ParamCache | None = None,
                 variant: str = "auto", step: StepParams | None = None) -> None:
        m = get_mode(mode) if isinstance(mode, str) else mode
        if n_heads % n_kv:
            raise ValueError(f"n_heads ({n_heads}) must be a multiple of n_kv_heads ({n_kv})")
        self.gpu, self.n_heads, self.n_kv, self.head_dim, self.mode = gpu, n_heads, n_kv, head_dim, m
        self.mutations = mutations
        self.params = params or ParamCache(gpu)
        # step: call and window parameters in buffers rewritten per call (bind groups reused across
        # decode steps); None: one immutable buffer per distinct content (ParamCache)
        self.step = step
        self.variant = default_variant(gpu, head_dim) if variant == "auto" else variant
        self.block = BLOCK  # read at construction, so a test can shrink it
        self._loop_blocks_cached: dict[bool, int] = {}
        self.folds = 2 if self.variant == "blocks" else 1  # state.wgsl: MAIN (and the blocks' PARTIAL)
        self.fold_floats = head_dim + 2  # one fold: m, l, acc[head_dim]
        self.scale_bits = f32_bits(1.0 / math.sqrt(head_dim))  # the score scale, as the kernels read it
        if self.variant not in VARIANTS:
            raise ValueError(f"attention variant must be one of {VARIANTS} or 'auto', got {variant!r}")
        if self.variant == "blocks" and head_dim % 4:
            raise KVError(f"blocks attention keeps the query in vectors of four: head_dim ({head_dim}) must be a "
                          "multiple of 4; use 'serial'")
        if self.variant == "blocks" and head_dim > gpu.limits.max_invocations:
            raise KVError(f"blocks attention runs head_dim ({head_dim}) invocations per workgroup, above this "
                          f"adapter's maxComputeInvocationsPerWorkgroup ({gpu.limits.max_invocations}); use 'serial'")
        # blocks variant, a V residual (q4res): the residual's f32 rows are folded by the main kernel, in
        # the same dispatch as the quantised positions before them (`pieces`, fold.wgsl's RESIDUAL)
        self.combines = self.variant == "blocks" and m.v_residual
        self.fold, self.fold_residual = self._fold_pair("main")
        # blocks variant: (fold, residual fold) with each window's merge in the same dispatch (blocks.wgsl's
        # fold_merge), for decode steps (`_fused_for`), where the adapter binds its storage buffers
        self.fused: tuple[Any, Any] | None = None
        if self.variant == "blocks" and FUSE_MERGE and gpu.limits.max_storage_buffers >= FOLD_MERGE_BUFFERS:
            self.fused = self._fold_pair("fold_merge")
        # blocks variant: (fold, residual fold) for batches, four query tokens a workgroup (fold_lanes.wgsl)
        self.lanes: tuple[Any, Any] | None = None
        if self.variant == "blocks" and head_dim % LANE_TOKENS == 0:
            self.lanes = self._fold_pair("fold_lanes")
        # batches of a combining mode: each window's rows decoded to f32 before the fold (DECODE_BATCHES)
        self.decode = None
        if self.lanes is not None and self.combines:
            self.decode = gpu.kernel(__package__, "decode_window.wgsl", **decode_constants(m.kf, m.vf, head_dim),
                                     **self._mutation_constants())
            self.decoded_fold = self._fold_kernel(FORMATS["f32"], FORMATS["f32"], entry="fold_lanes")
            self._decoded: Any = None  # the decoded rows of the window being folded (`_decoded_for`)
        if self.variant == "blocks":
            self.merge = self._fold_kernel(m.kf, m.vf, "merge_blocks.wgsl")
            self._part: Any = None  # the window's block folds, then counters at its end (block_state.wgsl)
            self._counters = 0  # counter words at the end of `_part` some call has used (all 0 between dispatches)
        self.finalize = gpu.kernel(__package__, "finalize.wgsl", HEAD_DIM=head_dim, FOLDS=self.folds)
        self.rotate = None
        if m.rotate_k:
            self.rotate = gpu.kernel(__package__, "rotate_query.wgsl", HEAD_DIM=head_dim,
                                     INV_SQRT_HD=f32_literal(1.0 / math.sqrt(head_dim)))
        self._qr: Any = None
        self._textures: dict[int, tuple[Any, WordTexture]] = {}  # buffer id -> (buffer, its texture copy)

    @property
    def fuses_merge(self) -> bool:
        """Whether decode steps fold and merge each window in one dispatch (blocks.wgsl's fold_merge)."""
        return self.fused is not None

    def _fused_for(self, n_q: int) -> tuple[Any, Any] | None:
        """The fold_merge kernels (fold, residual fold) a call of n_q query tokens takes, or None: fold, then merge."""
        return self.fused if n_q <= FUSED_TOKENS else None

    def _fold_pair(self, entry: str) -> tuple[Any, Any]:
        """(fold, residual fold) kernels of `entry`. Grouped K's newest partial group is folded from f32 K rows (and
        f32 V rows when V has a residual too) by a kernel of its own: same state, same order; otherwise one kernel
        serves both."""
        m = self.mode
        fold = self._fold_kernel(m.kf, m.vf, residual=self.combines, entry=entry)
        return fold, (self._fold_kernel(FORMATS["f32"], m.v_store, entry=entry) if m.grouped else fold)

    def _fold_kernel(self, kf: Any, vf: Any, filename: str | None = None, residual: bool = False,
                     entry: str = "main") -> Any:
        if self.variant == "serial" and not {kf.bits, vf.bits} <= {4, 8, 32}:  # serial.wgsl: K_STEP, V_STEP
            raise KVError(f"serial attention decodes 4-, 8- or 32-bit rows, not {kf.name}/{vf.name}")
        consts = decode_constants(kf, vf, self.head_dim)
        if self.variant == "blocks":
            consts["BLOCK"] = self.block
            if filename is None:
                consts["RESIDUAL"] = residual
                consts["Q_TILE"] = LANE_TOKENS if entry == "fold_lanes" else 1
        return self.gpu.kernel(__package__, filename or VARIANTS[self.variant], entry, FOLDS=self.folds, **consts,
                               **self._mutation_constants())

    def _mutation_constants(self) -> dict[str, bool]:
        """The MUT_ template constants (row_format.wgsl) of this instance's injected bugs."""
        mu = self.mutations
        return {"MUT_NORMALISE": mu.normalise_each_window, "MUT_GQA": mu.gqa_modulo, "MUT_CAUSAL": mu.causal_plus_one}

    def state_bytes(self, n_q: int) -> int:
        """Bytes of the (m, l, acc) state for n_q query tokens (blocks: MAIN and PARTIAL, twice that)."""
        return n_q * self.n_heads * self.fold_floats * 4 * self.folds

    def call_params(self, pos_base: int, n_q: int) -> Any:
        """The (cached) parameter buffer of one attention call."""
        if self.mutations.pos_base_zero:
            pos_base = 0
        scale = self.scale_bits
        if self.step is not None:
            return self.step.get(("attention", self.n_heads), pos_base, n_q, self.n_heads, self.n_kv, scale, 0, 0, 0)
        return self.params.get(pos_base, n_q, self.n_heads, self.n_kv, scale, 0, 0, 0)

    def window_params(self, win: Window, first: bool, index: int | None = None, last: bool = False,
                      role: str = "window") -> Any:
        """The (cached) descriptor buffer of one window (`index`: its place in the call, with `step`, under `role`;
        `last`: the call's last window, whose merge writes the output in the blocks variant)."""
        flags = int(first) | (2 if last and self.variant == "blocks" else 0)
        if self.step is not None and index is not None:
            return self.step.get((role, index), win.start, win.end, win.buf_base, win.k_off, win.v_off,
                                 flags, win.res_start, win.res_v_off)
        return self.params.get(win.start, win.end, win.buf_base, win.k_off, win.v_off, flags, win.res_start,
                               win.res_v_off)

    def plan(self, windows: list[Window], pos_base: int, n_q: int) -> list[Window]:
        """The call's pieces (`pieces`), with every parameter buffer the call reads made (or rewritten) now,
        so that recording it writes nothing."""
        out = self.pieces(windows, n_q)
        for i, win in enumerate(out):
            self.window_params(win, i == 0, i, i == len(out) - 1)
            if self._decodes(win, n_q):
                self.window_params(self._decoded_view(win), i == 0, i, i == len(out) - 1, "decoded window")
        self.call_params(pos_base, n_q)
        return out

    def begin(self, q_buf: Any, pos_base: int, n_q: int) -> Any:
        """Prepare a call: returns the query buffer the folds read (rotated for q4r)."""
        params = self.call_params(pos_base, n_q)
        if self.rotate is None:
            return q_buf
        nbytes = n_q * self.n_heads * self.head_dim * 4
        if self._qr is None or self._qr.size < nbytes:
            self._qr = self.gpu.buffer(nbytes)
        self.gpu.dispatch(self.rotate, [params, q_buf, self._qr], (workgroups(n_q * self.n_heads),))
        return self._qr

    def fold_window(self, q: Any, state: Any, pos_base: int, n_q: int, win: Window, first: bool,
                    index: int | None = None, out: Any = None, last: bool = False) -> None:
        """Fold the positions of `win` (at most `max_span(n_q)` of them) into `state`, in increasing order.
        Blocks variant: `out` is bound to every merge, and the call's `last` window's merge writes it."""
        span = self.max_span(n_q)
        if win.end - win.start > span or (win.end - 1) // span != win.start // span:
            raise KVError(f"attention: a fold of positions [{win.end}, {win.start}) crosses a multiple of the "
                          f"{span} one dispatch may cover; cut windows with `pieces`")
        params, wp = self.call_params(pos_base, n_q), self.window_params(win, first, index, last)
        n = n_q * self.n_heads
        fused = self._fused_for(n_q)
        lanes = self._lanes_for(n_q)
        fold = (fused or lanes or (self.fold, self.fold_residual))[1 if win.residual else 0]
        if self.variant == "serial":  # one invocation per (token, head); K and V through word textures
            kt, vt = self._texture(win.k), self._texture(win.v)
            self.gpu.dispatch(fold, [params, wp, q, kt, vt, state], (workgroups(n),))
            return
        if n > MAX_GROUPS:
            raise KVError(f"blocks attention: {n_q} tokens x {self.n_heads} heads = {n} workgroups in one "
                          f"dimension, above the {MAX_GROUPS} WebGPU allows; use fewer tokens per step")
        blocks = self.fold_shape(win, n_q)
        part = self._part_for(n, blocks)
        if out is None:
            raise KVError("blocks attention: fold_window needs the output buffer (the last merge writes it)")
        if self._decodes(win, n_q):  # the window as f32 rows, folded by f32's kernel (DECODE_BATCHES)
            decoded = self._decoded_for(win)
            count = (win.end - win.start) * self.n_kv * self.head_dim // 4
            self.gpu.dispatch(self.decode, [params, wp, win.k, win.v, win.k if win.res is None else win.res, decoded],
                              grid(workgroups(count)))
            win = self._decoded_view(win, decoded)
            wp = self.window_params(win, first, index, last, "decoded window")
            fold = self.decoded_fold
        # bound as `rc`: the residual rows (RESIDUAL kernels), else V's rows as vectors (fold_lanes' f32 V loads)
        rows = win.v if win.res is None else win.res
        # win.k is bound twice: as words (`kc`) and as 16-byte vectors (`kc4`, f32 K's loads)
        bound = [params, wp, q, win.k, win.v, state, part, rows, win.k]
        if fused is not None:
            self.gpu.dispatch(fold, [*bound, out], (blocks, n))
            return
        self.gpu.dispatch(fold, bound, (blocks, -(-n_q // LANE_TOKENS) * self.n_heads if lanes else n))
        self.gpu.dispatch(self.merge, [params, wp, state, part, out], grid(n))

    def _lanes_for(self, n_q: int) -> tuple[Any, Any] | None:
        """The fold_lanes kernels a call of n_q query tokens folds with (LANE_FOLD: batches), else None."""
        return self.lanes if LANE_FOLD and n_q > 1 else None

    def _decodes(self, win: Window, n_q: int) -> bool:
        """Whether window `win` of a call of n_q query tokens is decoded to f32 rows before its fold (DECODE_BATCHES):
        batches folded by fold_lanes in a combining mode, where the window holds quantised positions."""
        return (DECODE_BATCHES and self.decode is not None and self._lanes_for(n_q) is not None
                and not win.residual and win.res_start > win.start)

    def _decoded_view(self, win: Window, rows: Any = None) -> Window:
        """Window `win` decoded into `rows` as f32 rows (decode_window.wgsl's layout: position start at row 0, K rows,
        then V rows from word (end - start) * n_kv * head_dim), as f32's fold reads it."""
        return Window(rows, rows, win.start, win.end, buf_base=win.start,
                      v_off=(win.end - win.start) * self.n_kv * self.head_dim)

    def _decoded_for(self, win: Window) -> Any:
        """The buffer the decode of window `win` writes and its fold reads: one kept for all windows (a dispatch's
        writes wait for the fold before it), a new one where a window needs more room (a taped step keeps the old)."""
        nbytes = 2 * (win.end - win.start) * self.n_kv * self.head_dim * 4
        if self._decoded is None or int(self._decoded.size) < nbytes:
            self._decoded = self.gpu.buffer(nbytes)
        return self._decoded

    def _part_for(self, n: int, blocks: int) -> Any:
        """The buffer of a window's block folds for n (token, head)s: folds from word 0, one counter per (token,
        head) at its end (block_state.wgsl). Folds never reach a counter any call has used since the buffer was
        made (a fold's bits there would be a wrong count later): a call that needs more room or more counters
        gets a new, zero-filled buffer (a taped step keeps binding the old one, whose words it still fits)."""
        folds = n * blocks * self.fold_floats
        if self._part is not None and n <= self._counters and folds + self._counters <= int(self._part.size) // 4:
            return self._part
        counters = max(n, self._counters)
        if 4 * (folds + counters) > self.gpu.max_binding_bytes:
            counters = n
        self._part, self._counters = self.gpu.buffer(4 * (folds + counters)), counters
        return self._part

    def _texture(self, rows: Any) -> WordTexture:
        """K or V rows as the serial kernel reads them: a word texture as given (the cache keeps one per
        slot, refreshed where rows changed), or a buffer's whole content copied into one (recorded)."""
        if isinstance(rows, WordTexture):
            return rows
        entry = self._textures.get(id(rows))
        if entry is None:
            entry = self._textures[id(rows)] = (rows, self.gpu.word_texture(int(rows.size) // 4))
        self.gpu.copy_to_texture(rows, entry[1], int(rows.size))
        return entry[1]

    def finish(self, state: Any, out_buf: Any, pos_base: int, n_q: int) -> None:
        """out = acc / l (the serial variant; in the blocks variant the last window's merge wrote it)."""
        if self.variant == "blocks":
            return
        params = self.call_params(pos_base, n_q)
        self.gpu.dispatch(self.finalize, [params, state, out_buf], grid(workgroups(n_q * self.n_heads * self.head_dim)))

    def record(self, q_buf: Any, out_buf: Any, state: Any, pos_base: int, n_q: int,
               windows: list[Window]) -> None:
        """Record the whole call: fold every window in order (cut into `pieces`), then finalize."""
        windows = self.plan(windows, pos_base, n_q)  # parameter buffers before recording dispatches
        q = self.begin(q_buf, pos_base, n_q)
        for i, win in enumerate(windows):
            self.fold_window(q, state, pos_base, n_q, win, i == 0, i, out_buf, i == len(windows) - 1)
        self.finish(state, out_buf, pos_base, n_q)

