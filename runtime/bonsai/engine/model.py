"""The transformer forward on the GPU: records every dispatch of one step into one compute pass."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import ModelConfig
from ..ops import argmax, rmsnorm, rope, swiglu
from ..ops import matmul as mm
from .weights import Weights


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
        self.gate_up = gpu.buffer(batch * 2 * cfg.ffn_dim * f)  # (batch, 2 * ffn_dim)
        self.act = gpu.buffer(batch * cfg.ffn_dim * f)          # (batch, ffn_dim)
        self.logits = gpu.buffer(batch * cfg.vocab_size * f)    # (batch, vocab)
        self.token = gpu.buffer(16)                             # (1,) u32 argmax of the last row


class Params:
    """Parameter buffers, one per distinct content, created on first use and then bound as-is."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._bufs: dict[bytes, Any] = {}

    def __call__(self, block: bytes) -> Any:
        buf = self._bufs.get(block)
        if buf is None:
            buf = self._bufs[block] = self.gpu.upload(block)
        return buf


class GpuModel:
    """Weights + activations + the kernels' params; `record(...)` lays down one forward pass."""

    def __init__(self, gpu: Any, cfg: ModelConfig, weights: Weights, cache: Any, batch: int = 32) -> None:
        self.gpu, self.cfg, self.w, self.cache = gpu, cfg, weights, cache
        self.act = Activations(gpu, cfg, batch)
        self.params = Params(gpu)
        self.rope_q = gpu.buffer(48)  # rewritten each step: the position changes
        self.rope_k = gpu.buffer(48)

    def _mm(self, m: mm.QMatrix, x: Any, y: Any, t: int, *, x_stride: int, y_stride: int, y_off: int = 0,
            x_off: int = 0, accum: bool = False) -> None:
        prm = self.params(mm.params(m.rows, m.cols, t, m.row_bytes, x_stride, y_stride, y_off, x_off))
        mm.dispatch(self.gpu, m, x, y, prm, t, accum=accum)

    def record(self, ids: list[int], pos: int, *, all_logits: bool) -> None:
        """Record the forward of `ids` at positions pos.. ; logits land in act.logits (rows: all or the last)."""
        c, a, g, t = self.cfg, self.act, self.gpu, len(ids)
        assert 0 < t <= a.batch
        g.write(a.ids, np.asarray(ids, np.uint32))
        g.write(self.rope_q, rope.params(c.n_heads, c.head_dim, c.head_dim, c.q_dim, 0, pos, c.rope_theta,
                                         c.n_heads, c.rms_eps))
        g.write(self.rope_k, rope.params(c.n_kv_heads, c.head_dim, c.head_dim, c.kv_dim, 0, pos, c.rope_theta,
                                         0, c.rms_eps))
        e = self.w.embed
        mm.dispatch_embed(g, e, a.ids, a.x, self.params(mm.params(e.rows, e.cols, t, e.row_bytes, 0, c.dim)), t)
        norm_prm = self.params(rmsnorm.params(t, c.dim, c.dim, c.dim, c.rms_eps))
        swiglu_prm = self.params(swiglu.params(t, c.ffn_dim, 2 * c.ffn_dim, c.ffn_dim))
        for layer, lw in enumerate(self.w.layers):
            rmsnorm.dispatch(g, a.x, lw.attn_norm, a.xn, norm_prm, t)
            self._mm(lw.wq, a.xn, a.q, t, x_stride=c.dim, y_stride=c.q_dim)
            self._mm(lw.wk, a.xn, a.k, t, x_stride=c.dim, y_stride=c.kv_dim)
            self._mm(lw.wv, a.xn, a.v, t, x_stride=c.dim, y_stride=c.kv_dim)
            rope.dispatch(g, a.q, lw.qk_norm, self.rope_q, c.n_heads, t, neox=c.rope_neox, qk_norm=c.qk_norm)
            rope.dispatch(g, a.k, lw.qk_norm, self.rope_k, c.n_kv_heads, t, neox=c.rope_neox, qk_norm=c.qk_norm)
            self.cache.append(layer, a.k, a.v, pos, t)
            self.cache.attend(layer, a.q, a.att, pos, t, c.n_heads)
            self._mm(lw.wo, a.att, a.x, t, x_stride=c.q_dim, y_stride=c.dim, accum=True)
            rmsnorm.dispatch(g, a.x, lw.ffn_norm, a.xn, norm_prm, t)
            self._mm(lw.w_gate_up, a.xn, a.gate_up, t, x_stride=c.dim, y_stride=2 * c.ffn_dim)
            swiglu.dispatch(g, a.gate_up, a.act, swiglu_prm, t, c.ffn_dim)
            self._mm(lw.w_down, a.act, a.x, t, x_stride=c.ffn_dim, y_stride=c.dim, accum=True)
        out = self.w.output
        if all_logits:
            rmsnorm.dispatch(g, a.x, self.w.out_norm, a.xn, norm_prm, t)
            self._mm(out, a.xn, a.logits, t, x_stride=c.dim, y_stride=c.vocab_size)
        else:  # only the last token's logits: normalise all rows (cheap), project row t-1
            rmsnorm.dispatch(g, a.x, self.w.out_norm, a.xn, norm_prm, t)
            self._mm(out, a.xn, a.logits, 1, x_stride=c.dim, y_stride=c.vocab_size, x_off=(t - 1) * c.dim)
        argmax.dispatch(g, a.logits, a.token, self.params(argmax.params(c.vocab_size, 0)))

    def read_logits(self, rows: int) -> np.ndarray:
        n = rows * self.cfg.vocab_size
        return np.frombuffer(self.gpu.read(self.act.logits, n * 4), np.float32).reshape(rows, self.cfg.vocab_size)

    def read_token(self) -> int:
        return int(np.frombuffer(self.gpu.read(self.act.token, 4), np.uint32)[0])
