"""The transformer forward on the GPU: records every dispatch of one step into one compute pass."""

from __future__ import annotations

import struct
from array import array
from collections import OrderedDict
from typing import Any

from ..config import ModelConfig
from ..errors import GpuLimitError
from ..gpu.backend import GpuBackend
from ..gpu.params import ParamCache
from ..kv.api import KVCacheAPI
from ..ops import argmax, qkv_store, rmsnorm, rope, tiled
from ..ops import matmul as mm
from .weights import Weights

# Tapes kept, by step key (most recently used last). A grouped mode alternates two kinds of step within a
# window (steps that append to the residual, and every G-th that fills the group), and each replays the
# tape of the last step of its kind; steps alternate two sets of step-parameter slots (`StepParams`), each
# taped apart; a few more let a key that comes back after a change replay too.
TAPES_KEPT = 8


class Activations:
    """Activation buffers for up to `batch` tokens, allocated once so bind groups are reused."""

    def __init__(self, gpu: Any, cfg: ModelConfig, batch: int) -> None:
        f = 4
        self.batch = batch
        self.ids = gpu.buffer(batch * 4)                        # (batch,) u32 token ids
        self.x = gpu.buffer(batch * cfg.dim * f)                # (batch, dim) residual stream
        self.xn = gpu.buffer(batch * cfg.dim * f)               # (batch, dim) normed input
        self.q = gpu.buffer(batch * cfg.q_dim * f)              # (batch, n_heads, head_dim)
        self.k = gpu.buffer(batch * cfg.kv_dim * f)             # (batch, n_kv_heads, head_dim)
        self.v = gpu.buffer(batch * cfg.kv_dim * f)             # (batch, n_kv_heads, head_dim)
        self.att = gpu.buffer(batch * cfg.q_dim * f)            # (batch, n_heads, head_dim)
        self.act = gpu.buffer(batch * cfg.ffn_dim * f)          # (batch, ffn_dim)
        self.logits = gpu.buffer(batch * cfg.vocab_size * f)    # (batch, vocab)
        self.token = gpu.buffer(4 * (1 + HISTORY))              # (1 + HISTORY,) u32: the argmax of the
        #                                                         last row, then the resident loop's ids


BATCH_SUBMIT_EVERY = 2  # layers per submit for batches (Forward.batch_submit_every)
BATCH_FIRST_SUBMIT = 1  # a batch's first submit after this many layers (Forward.batch_first_submit)
HISTORY = 63  # steps one GPU-resident block may run between readbacks (its ids ride on one KV readback)


# tokens per forward step unless the caller says: 512 on GPUs, where the tiled matmul then has workgroups
# enough (H200: 10,327 prompt tok/s in 512-token steps, 4,940 in 128-token steps; bench/NOTES.md session
# 10), 128 on CPU adapters (their kernels gain nothing from longer steps; the step's buffers stay small)
BATCH_GPU, BATCH_CPU = 512, 128


def default_batch(gpu: Any) -> int:
    """The engine's tokens per step on `gpu` when the caller gives none."""
    return BATCH_CPU if gpu.is_cpu else BATCH_GPU


def fit_batch(batch: int, cfg: ModelConfig, max_binding_bytes: int) -> int:
    """`batch`, lowered until the widest activation buffer (logits: batch x vocab f32) fits one binding."""
    row = 4 * max(cfg.vocab_size, cfg.ffn_dim, cfg.q_dim, cfg.dim)
    if row > max_binding_bytes:
        raise GpuLimitError(f"one token's activations ({row} bytes for a vocabulary of {cfg.vocab_size}) are above "
                            f"this adapter's maxStorageBufferBindingSize ({max_binding_bytes} bytes)")
    return max(1, min(batch, max_binding_bytes // row))


class GpuModel:
    """Weights + activations + the kernels' params; `record(...)` lays down one forward pass."""

    def __init__(self, gpu: GpuBackend, cfg: ModelConfig, weights: Weights, cache: KVCacheAPI, batch: int = 32) -> None:
        self.gpu, self.cfg, self.w, self.cache = gpu, cfg, weights, cache
        self.act = Activations(gpu, cfg, batch)
        self.params = ParamCache(gpu, limit=1 << 16)  # every distinct block a step uses, made once
        # RoPE's params and a batch's cos/sin rows, rewritten each batch: the positions change (a one-token
        # step's block is a step parameter, `record`)
        self.rope = gpu.buffer(rope.block_bytes(batch, cfg.head_dim))
        self.angles = rope.AngleTable(cfg.head_dim, cfg.rope_theta)
        # a decode step submits every N layers (0: none of its own). 0: a step's parameters are written without a
        # submit (`StepParams`), so consecutive decode steps share the open pass until one takes back the set of
        # parameter slots the step two before it bound, and `begin_step` submits then: a submit every second step.
        # H100, GPU-resident loop at 1K (bench/NOTES.md, commit 667f03c): ahead of every 15 (a submit half-way through
        # each step) in 11 of 14 alternating rounds, medians 653 / 636 and 660 / 641 tok/s. (With a submit at every
        # step's first parameter write, commit 3c88574 found 15 ahead of 0 and 10 on the H200.)
        self.submit_every = 0
        # batches submit every BATCH_SUBMIT_EVERY layers: a 512-token step records for ~8 ms on the H200
        # while its GPU time is ~35 ms, so the GPU waits only for the first layers' recording
        self.batch_submit_every = BATCH_SUBMIT_EVERY
        # the first after the first layer alone (BATCH_FIRST_SUBMIT; 0: none apart), so the GPU starts one layer's
        # recording sooner (~0.2 ms of a 512-token step's ~12 on the H100, bench/NOTES.md, commit d7884c4)
        self.batch_first_submit = BATCH_FIRST_SUBMIT
        # and each of those submits starts reading the rows recorded so far (`KVCache.read_ahead`), so the step's
        # sync commits the first layers' rows to the host master while the GPU works on the last ones. Only where
        # a read can stay in flight on a GPU of its own (on CPU adapters the "GPU" is the host's cores)
        self.read_ahead = gpu.reads_in_flight and not gpu.is_cpu
        # decode steps fold RMSNorm into the matmul after it where the kernel can (GPUs; the same bits:
        # matmul.wgsl). Not for batches on that matvec: every workgroup would sum x^2 for its 8 tokens again, where
        # one norm dispatch does it once (H200: prefill about 20% slower with it; bench/NOTES.md, commit aed3db5)
        self.fuse_norm = True
        # batches that take the tiled matmul fold the norm into it the tiled way (matmul_tiled.wgsl NORM: each
        # activation staged times its norm weight, each token's products scaled after the sum; the x^2 sums come
        # from the values the tile stages anyway): two dispatches fewer per layer, not rmsnorm.wgsl's bits
        self.fuse_batch_norm = True
        # GGML-normal RoPE (llama) in the fused QKV matmul's epilogue where the kernel can (GPUs, decode steps and
        # batches; rope.wgsl's arithmetic, so its bits): one dispatch fewer per layer
        self.fuse_rope = True
        # and the KV store in that epilogue too, for decode steps whose rows the cache stores as f32 (f32,
        # q4res) where the adapter has 10 storage buffers per stage (ops.qkv_store): one dispatch fewer per layer
        self.fuse_store = True
        self.replay = True  # tape decode steps and replay them while their shape holds (see `record`)
        self.replays = 0  # steps replayed so far
        self._tapes: OrderedDict[tuple, list[Any]] = OrderedDict()  # step key -> its tape (`TAPES_KEPT`)

    def _mm(self, m: mm.QMatrix, x: Any, y: Any, t: int, *, x_stride: int, y_stride: int, y_off: int = 0,
            x_off: int = 0, accum: bool = False) -> None:
        prm = self.params.block(m.params(t, x_stride, y_stride, y_off, x_off))
        mm.dispatch(self.gpu, m, x, y, prm, t, accum=accum, x_words=x_off + t * x_stride)

    def record(self, ids: list[int], pos: int, *, all_logits: bool, from_token: bool = False, hist: int = 0,
               park: bool = False) -> None:
        """Record the forward of `ids` at positions pos.. ; logits land in act.logits (rows: all or the last).

        Decode steps are taped: while the cache's `step_key` (window count, blocks per window) stays
        the same, the next step only writes its inputs and replays the taped dispatches, skipping the
        Python that chose them (bench/NOTES.md). `replay = False` turns this off.

        GPU-resident decoding: from_token=True embeds the id the last step's argmax left in act.token[0]
        (one position; `ids` is not read), the argmax also lands in act.token[1 + hist], and park=True
        moves the step's staged KV rows aside (`KVCache.park`) so the next step needs no readback first.
        """
        c, a, g, t = self.cfg, self.act, self.gpu, len(ids)
        assert 0 < t <= a.batch and (t == 1 or not from_token) and 0 <= hist < HISTORY
        step = self.cache.step_params
        step.begin_step(pos)  # this step's parameters go to the set of slots of pos's parity
        key = self._step_key(pos, t, all_logits, from_token)
        if not from_token:
            g.write(a.ids, array("I", ids))
        block = (rope.params(c.n_heads + c.n_kv_heads, c.head_dim, c.head_dim, pos, c.n_heads, c.rms_eps)
                 + self.angles.rows(pos, t))
        with step.deferred():  # one write for all of them, submitting nothing: no dispatch in the pass binds them
            hist_slot = step.get(("hist",), hist, 0, 0, 0)  # where argmax also writes the id (act.token[1 + hist])
            self.cache.prepare(pos, t, c.n_heads, park=park)  # the step's position-dependent KV parameters
            rope_block = step.get_bytes(("rope",), block) if t == 1 else self.rope
        if t > 1:
            g.write(self.rope, block)
        tape = self._tapes.get(key) if key is not None else None
        if key is not None and tape is not None:
            self._tapes.move_to_end(key)
            self.cache.replay_appends(pos, t)
            g.replay(tape)
            self.replays += 1
        else:
            if key is not None:
                g.start_tape()
            self._record_dispatches(pos, t, all_logits, from_token, rope_block=rope_block, hist_slot=hist_slot)
            if key is not None:
                self._keep_tape(key, g.stop_tape())
        if park:
            self.cache.park()

    def _keep_tape(self, key: tuple, tape: list[Any] | None) -> None:
        """Keep the tape of a step just recorded under its key (None: it wrote, read or copied, not kept)."""
        if tape is None:
            self._tapes.pop(key, None)
            return
        self._tapes[key] = tape
        self._tapes.move_to_end(key)
        while len(self._tapes) > TAPES_KEPT:
            self._tapes.popitem(last=False)

    def forget_tapes(self) -> None:
        """Drop every kept tape: the next steps record afresh (for tests that change what steps record)."""
        self._tapes.clear()

    @property
    def last_tape(self) -> list[Any] | None:
        """The tape recorded or replayed most recently (None before any), for the benches' kernel tables."""
        return next(reversed(self._tapes.values()), None)

    def _step_key(self, pos: int, t: int, all_logits: bool, from_token: bool) -> tuple | None:
        """Equal keys: equal dispatch lists (None: do not tape or replay this step)."""
        if not self.replay or t != 1:
            return None
        kv = self.cache.step_key(pos, t, self.cfg.n_heads)
        fusions = (self.fuse_norm, self.fuse_batch_norm, self.fuse_rope, self.fuse_store)
        # the tape binds this step's set of step-parameter slots
        return None if kv is None else (all_logits, from_token, self.submit_every, *fusions,
                                        self.cache.step_params.current, kv)

    def _fuses_norm(self, m: mm.QMatrix, t: int) -> bool:
        """Whether the RMSNorm before matrix m's product of t tokens goes into the product's dispatch."""
        if t == 1:
            return self.fuse_norm and mm.fuses_norm(m)
        return self.fuse_batch_norm and tiled.applies(m, t) and mm.fuses_norm(m)

    def _record_dispatches(self, pos: int, t: int, all_logits: bool, from_token: bool, *, rope_block: Any,
                           hist_slot: Any) -> None:
        """The step's dispatches; rope_block: RoPE's parameters and cos/sin rows, hist_slot: argmax's history
        index (both written by `record`)."""
        c, a, g = self.cfg, self.act, self.gpu
        e = self.w.embed
        mm.dispatch_embed(g, e, a.token if from_token else a.ids, a.x, self.params.block(e.params(t, 0, c.dim)), t)
        norm_prm = self.params.block(rmsnorm.params(t, c.dim, c.dim, c.dim, c.rms_eps))
        every = self.submit_every if t == 1 else self.batch_submit_every
        first = 0 if t == 1 else self.batch_first_submit
        for layer, lw in enumerate(self.w.layers):
            if every and layer and (layer % every == 0 or layer == first):
                if t > 1 and self.read_ahead:
                    self.cache.read_ahead()  # the rows of the layers so far go with this submit
                g.flush()
            roped, stored = False, None
            if len(lw.qkv) == 1:  # Q, K and V from one dispatch (with the norm and RoPE in it, where the kernel can)
                m = lw.qkv[0]
                fused = self._fuses_norm(m, t)
                roped = self.fuse_rope and not c.rope_neox and not c.qk_norm and mm.fuses_rope(m, t, c.head_dim)
                if not fused:
                    rmsnorm.dispatch(g, a.x, lw.attn_norm, a.xn, norm_prm, t)
                eps = c.rms_eps if fused else 0.0
                if roped and self.fuse_store and qkv_store.fuses(g, m, t, c.head_dim, c.q_dim):
                    stored = self.cache.epilogue_rows(layer, pos, t)
                if stored is not None:  # and the K/V rows straight into the cache: no store dispatch
                    prm = self.params.block(qkv_store.params(m, c.dim, c.q_dim, c.kv_dim, eps, stored))
                    qkv_store.dispatch(g, m, a.x if fused else a.xn, a.q, prm, stored,
                                       norm=lw.attn_norm if fused else None, rope=(rope_block, c.head_dim))
                else:
                    prm = self.params.block(m.params(t, c.dim, 0, n1=c.q_dim, n2=c.kv_dim, eps=eps))
                    mm.dispatch(g, m, a.x if fused else a.xn, a.q, prm, t, out=mm.OUT_SPLIT, y2=a.k, y3=a.v,
                                x_words=t * c.dim, norm=lw.attn_norm if fused else None,
                                rope=(rope_block, c.head_dim) if roped else None)
            else:
                rmsnorm.dispatch(g, a.x, lw.attn_norm, a.xn, norm_prm, t)
                for m, y, width in zip(lw.qkv, (a.q, a.k, a.v), (c.q_dim, c.kv_dim, c.kv_dim), strict=True):
                    self._mm(m, a.xn, y, t, x_stride=c.dim, y_stride=width)
            if not roped:
                rope.dispatch(g, a.q, a.k, lw.qk_norm, rope_block, c.n_heads + c.n_kv_heads, t, neox=c.rope_neox,
                              qk_norm=c.qk_norm, head_dim=c.head_dim)
            self.cache.append(layer, a.k, a.v, pos, t, stored=stored)
            self.cache.attend(layer, a.q, a.att, pos, t, c.n_heads)
            self._mm(lw.wo, a.att, a.x, t, x_stride=c.q_dim, y_stride=c.dim, accum=True)
            m = lw.w_gate_up  # fused SwiGLU: act = silu(gate) * up straight from the matmul (and the norm)
            fused = self._fuses_norm(m, t)
            if not fused:
                rmsnorm.dispatch(g, a.x, lw.ffn_norm, a.xn, norm_prm, t)
            prm = self.params.block(m.params(t, c.dim, c.ffn_dim, eps=c.rms_eps if fused else 0.0))
            mm.dispatch(g, m, a.x if fused else a.xn, a.act, prm, t, out=mm.OUT_SWIGLU, x_words=t * c.dim,
                        norm=lw.ffn_norm if fused else None)
            self._mm(lw.w_down, a.act, a.x, t, x_stride=c.ffn_dim, y_stride=c.dim, accum=True)
        out = self.w.output
        if self.fuse_norm and (t == 1 or not all_logits) and mm.fuses_norm(out):  # one row: its norm in the product
            prm = self.params.block(out.params(1, c.dim, c.vocab_size, x_offset=(t - 1) * c.dim, eps=c.rms_eps))
            mm.dispatch(g, out, a.x, a.logits, prm, 1, x_words=t * c.dim, norm=self.w.out_norm)
        elif all_logits:
            rmsnorm.dispatch(g, a.x, self.w.out_norm, a.xn, norm_prm, t)
            self._mm(out, a.xn, a.logits, t, x_stride=c.dim, y_stride=c.vocab_size)
        else:  # only the last token's logits: normalise all rows (cheap), project row t-1
            rmsnorm.dispatch(g, a.x, self.w.out_norm, a.xn, norm_prm, t)
            self._mm(out, a.xn, a.logits, 1, x_stride=c.dim, y_stride=c.vocab_size, x_off=(t - 1) * c.dim)
        argmax.dispatch(g, a.logits, a.token, self.params.block(argmax.params(c.vocab_size, 0)), hist_slot)

    def read_logits(self, rows: int) -> memoryview[float]:
        """The first `rows` rows of logits: a read-only f32 memoryview shaped (rows, vocab)."""
        v = self.cfg.vocab_size
        return memoryview(self.gpu.read(self.act.logits, rows * v * 4)).cast("f", (rows, v))

    def read_token(self) -> int:
        """The argmax id of the last row (written by the argmax kernel)."""
        return self.token_from(self.gpu.read(self.act.token, 4))

    @staticmethod
    def token_from(raw: bytes) -> int:
        """The token id in the 4 bytes read back from `act.token`."""
        return int(struct.unpack("<I", raw)[0])
