"""GPU front-ends of single kernels for the tests: upload numpy arrays, record one dispatch, read back.

The kernels' oracles are `bonsai.reference` (ops, quants); `*_reference` here only compose them the
way a test needs (e.g. qwen3's per-head Q/K norm before RoPE).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bonsai.gguf import GGMLType
from bonsai.ops import argmax, matmul, rmsnorm, rope, swiglu
from bonsai.ops.matmul import QMatrix
from bonsai.ops.qtypes import QType
from bonsai.reference import ops as ref
from bonsai.reference.quants import dequantize_raw


def dequantize(raw: Any, q: QType, ncols: int) -> np.ndarray:
    """Rows of raw GGML blocks (uint8 (rows, row_bytes)) -> float32 (rows, ncols), by the reference."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, q.row_bytes(ncols))
    return dequantize_raw(raw, GGMLType(q.ggml_id)).reshape(-1, ncols)


def matmul_reference(raw: Any, q: QType, rows: int, cols: int, x: Any) -> np.ndarray:
    """Float64 oracle: x (t, cols) @ dequant(W).T -> (t, rows)."""
    w = dequantize(raw, q, cols).astype(np.float64)
    return np.asarray(x, np.float64).reshape(-1, cols) @ w.T


def rmsnorm_reference(x: Any, w: Any, eps: float) -> np.ndarray:
    """Float64 oracle."""
    return ref.rms_norm(np.asarray(x, np.float64), np.asarray(w, np.float64), eps)


def rope_reference(x: Any, pos_base: int, base: float, *, neox: bool, n_rot: int | None = None,
                   norm_w: Any = None, n_q: int = 0, eps: float = 1e-6) -> np.ndarray:
    """Float64 oracle of the rope kernel on x (t, heads, head_dim): heads < n_q normed with norm_w[0:d],
    the others with norm_w[d:2d] (qwen3), then rotated."""
    x = np.array(x, np.float64)
    if norm_w is not None:
        nw = np.asarray(norm_w, np.float64).reshape(2, x.shape[-1])
        x = np.concatenate([ref.rms_norm(x[:, :n_q], nw[0], eps), ref.rms_norm(x[:, n_q:], nw[1], eps)], axis=1)
    return ref.rope_at(x, pos_base, base, neox, n_rot)


def swiglu_reference(gate_up: Any) -> np.ndarray:
    """Float64 oracle: silu(gate) * up of (t, 2f) = [gate | up]."""
    g, u = np.split(np.asarray(gate_up, np.float64), 2, axis=-1)
    return ref.swiglu(g, u)


def interleave_rows_reference(raw: Any, rows_a: int) -> bytes:
    """Oracle of `matmul.interleave_rows`: [A; B] as (2, rows_a, row_bytes), transposed to A0, B0, A1, ..."""
    r = np.frombuffer(raw, np.uint8).reshape(2, rows_a, -1)
    return np.ascontiguousarray(r.transpose(1, 0, 2)).tobytes()


def matmul_run(gpu: Any, m: QMatrix, x: Any, *, accum_into: Any = None) -> Any:
    """x (t, cols) float32 -> y (t, rows) float32 (+ accum_into), one dispatch."""
    x = np.ascontiguousarray(x, np.float32).reshape(-1, m.cols)
    t = x.shape[0]
    xb = gpu.upload(x)
    y0 = np.zeros((t, m.rows), np.float32) if accum_into is None else accum_into.astype(np.float32)
    yb = gpu.upload(y0)
    prm = gpu.upload(m.params(t, m.cols, m.rows))
    matmul.dispatch(gpu, m, xb, yb, prm, t, accum=accum_into is not None)
    return np.frombuffer(gpu.read(yb, y0.nbytes), np.float32).reshape(t, m.rows)


def embed_run(gpu: Any, m: QMatrix, ids: Any) -> Any:
    """Token ids -> (t, cols) float32 rows."""
    ids = np.asarray(ids, np.uint32)
    t = len(ids)
    yb = gpu.buffer(t * m.cols * 4)
    prm = gpu.upload(m.params(t, 0, m.cols))
    matmul.dispatch_embed(gpu, m, gpu.upload(ids), yb, prm, t)
    return np.frombuffer(gpu.read(yb, t * m.cols * 4), np.float32).reshape(t, m.cols)


def rmsnorm_run(gpu: Any, x: Any, w: Any, eps: float) -> Any:
    """(rows, dim) -> (rows, dim) float32."""
    x = np.ascontiguousarray(x, np.float32)
    rows, dim = x.shape
    y = gpu.buffer(x.nbytes)
    rmsnorm.dispatch(gpu, gpu.upload(x), gpu.upload(np.asarray(w, np.float32)), y,
                     gpu.upload(rmsnorm.params(rows, dim, dim, dim, eps)), rows)
    return np.frombuffer(gpu.read(y, x.nbytes), np.float32).reshape(rows, dim)


def rope_run(gpu: Any, x: Any, pos_base: int, base: float, *, neox: bool, n_rot: int | None = None,
             norm_w: Any = None, n_q: int = 0, eps: float = 1e-6) -> Any:
    """(t, heads, head_dim) -> rotated copy; heads < n_q go through the q buffer, the others through
    the k buffer (n_q=0: all heads are K heads)."""
    x = np.ascontiguousarray(x, np.float32)
    t, h, d = x.shape

    def up(a: Any) -> Any:
        return gpu.upload(a.copy() if a.size else np.zeros(4, np.float32))

    qb, kb = up(x[:, :n_q]), up(x[:, n_q:])
    w = gpu.upload(np.zeros(4, np.float32) if norm_w is None else np.asarray(norm_w, np.float32))
    prm = gpu.upload(rope.params(h, d, n_rot or d, pos_base, n_q, eps) + rope.angle_rows(pos_base, t, n_rot or d, base))
    rope.dispatch(gpu, qb, kb, w, prm, h, t, neox=neox, qk_norm=norm_w is not None, head_dim=d)

    def back(buf: Any, heads: int) -> Any:
        n = t * heads * d
        return np.frombuffer(gpu.read(buf, n * 4) if n else b"", np.float32).reshape(t, heads, d)

    qo, ko = back(qb, n_q), back(kb, h - n_q)
    return np.concatenate([qo, ko], axis=1)


def swiglu_run(gpu: Any, gate_up: Any) -> Any:
    """(t, 2f) -> (t, f)."""
    x = np.ascontiguousarray(gate_up, np.float32)
    t, f2 = x.shape
    y = gpu.buffer(t * f2 // 2 * 4)
    swiglu.dispatch(gpu, gpu.upload(x), y, gpu.upload(swiglu.params(t, f2 // 2, f2, f2 // 2)), t, f2 // 2)
    return np.frombuffer(gpu.read(y, t * f2 // 2 * 4), np.float32).reshape(t, f2 // 2)


def argmax_run(gpu: Any, x: Any) -> int:
    """Index of the largest value of a float32 row (lowest index on ties), on the GPU."""
    x = np.ascontiguousarray(x, np.float32)
    out = gpu.buffer(16)
    argmax.dispatch(gpu, gpu.upload(x), out, gpu.upload(argmax.params(x.size)), gpu.buffer(16))
    return int(np.frombuffer(gpu.read(out, 4), np.uint32)[0])
