"""Numpy front-ends and references of each op, for tests, the reference model and benchmarks.

`<op>_run` uploads numpy arrays, records one dispatch of the op's kernel and reads the result back;
`<op>_reference` is the float64 numpy oracle the kernel is tested against. The op modules themselves
import no numpy, so the engine's import closure runs where numpy does not (Pyodide).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import argmax, matmul, rmsnorm, rope, swiglu
from .matmul import QMatrix
from .qtypes import QType

# --- GGML blocks --------------------------------------------------------------------------------


def dequantize(raw: Any, q: QType, ncols: int) -> Any:
    """Rows of raw GGML blocks (uint8, shape (rows, row_bytes)) -> float32 (rows, ncols)."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, q.row_bytes(ncols))
    rows = raw.shape[0]
    if q.name == "F32":
        return raw.view(np.float32).reshape(rows, ncols).copy()
    if q.name == "F16":
        return raw.view(np.float16).astype(np.float32).reshape(rows, ncols)
    blocks = raw.reshape(rows, ncols // q.block, q.nbytes)
    d = blocks[..., 0:2].copy().view(np.float16).astype(np.float32)  # (rows, nb, 1)
    if q.name in ("Q4_0", "Q4_1"):
        qs = blocks[..., 4:20] if q.name == "Q4_1" else blocks[..., 2:18]
        nib = np.concatenate([qs & 0xF, qs >> 4], axis=-1).astype(np.float32)
        if q.name == "Q4_0":
            w = (nib - np.float32(8)) * d
        else:
            m = blocks[..., 2:4].copy().view(np.float16).astype(np.float32)
            w = nib * d + m
    elif q.name == "Q8_0":
        w = blocks[..., 2:34].copy().view(np.int8).astype(np.float32) * d
    else:  # Q1_0
        bits = np.unpackbits(blocks[..., 2:18], axis=-1, bitorder="little")
        w = np.where(bits == 1, d, -d)
    return w.astype(np.float32).reshape(rows, ncols)


def quantize_q1_0(w: Any) -> Any:
    """Float rows (ncols % 128 == 0) -> Q1_0 bytes (rows, row_bytes); d = mean |w| of the block."""
    rows, ncols = w.shape
    b = w.reshape(rows, ncols // 128, 128)
    d = np.abs(b).mean(axis=-1, keepdims=True).astype(np.float16)
    bits = np.packbits((b > 0).astype(np.uint8), axis=-1, bitorder="little")
    return np.concatenate([d.view(np.uint8), bits], axis=-1).reshape(rows, -1)


def interleave_rows_reference(raw: Any, rows_a: int) -> bytes:
    """Oracle of `matmul.interleave_rows`: [A; B] as (2, rows_a, row_bytes), transposed to A0, B0, A1, ..."""
    r = np.frombuffer(raw, np.uint8).reshape(2, rows_a, -1)
    return np.ascontiguousarray(r.transpose(1, 0, 2)).tobytes()


# --- matmul / embedding -------------------------------------------------------------------------


def matmul_run(gpu: Any, m: QMatrix, x: Any, *, accum_into: Any = None) -> Any:
    """x (t, cols) float32 -> y (t, rows) float32 (+ accum_into), one dispatch."""
    x = np.ascontiguousarray(x, np.float32).reshape(-1, m.cols)
    t = x.shape[0]
    xb = gpu.upload(x)
    y0 = np.zeros((t, m.rows), np.float32) if accum_into is None else accum_into.astype(np.float32)
    yb = gpu.upload(y0)
    prm = gpu.upload(matmul.params(m.rows, m.cols, t, m.row_bytes, m.cols, m.rows))
    matmul.dispatch(gpu, m, xb, yb, prm, t, accum=accum_into is not None)
    return np.frombuffer(gpu.read(yb, y0.nbytes), np.float32).reshape(t, m.rows)


def embed_run(gpu: Any, m: QMatrix, ids: Any) -> Any:
    """Token ids -> (t, cols) float32 rows."""
    ids = np.asarray(ids, np.uint32)
    t = len(ids)
    yb = gpu.buffer(t * m.cols * 4)
    prm = gpu.upload(matmul.params(m.rows, m.cols, t, m.row_bytes, 0, m.cols))
    matmul.dispatch_embed(gpu, m, gpu.upload(ids), yb, prm, t)
    return np.frombuffer(gpu.read(yb, t * m.cols * 4), np.float32).reshape(t, m.cols)


def matmul_reference(raw: Any, q: QType, rows: int, cols: int, x: Any) -> Any:
    """Float64 oracle: x (t, cols) @ dequant(W).T -> (t, rows)."""
    w = dequantize(raw, q, cols).astype(np.float64)
    return np.asarray(x, np.float64).reshape(-1, cols) @ w.T


# --- elementwise ops ----------------------------------------------------------------------------


def rmsnorm_run(gpu: Any, x: Any, w: Any, eps: float) -> Any:
    """(rows, dim) -> (rows, dim) float32."""
    x = np.ascontiguousarray(x, np.float32)
    rows, dim = x.shape
    y = gpu.buffer(x.nbytes)
    rmsnorm.dispatch(gpu, gpu.upload(x), gpu.upload(np.asarray(w, np.float32)), y,
                     gpu.upload(rmsnorm.params(rows, dim, dim, dim, eps)), rows)
    return np.frombuffer(gpu.read(y, x.nbytes), np.float32).reshape(rows, dim)


def rmsnorm_reference(x: Any, w: Any, eps: float) -> Any:
    """Float64 oracle."""
    x = np.asarray(x, np.float64)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * np.asarray(w, np.float64)


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
    prm = gpu.upload(rope.params(h, d, n_rot or d, pos_base, base, n_q, eps))
    rope.dispatch(gpu, qb, kb, w, prm, h, t, neox=neox, qk_norm=norm_w is not None, head_dim=d)

    def back(buf: Any, heads: int) -> Any:
        n = t * heads * d
        return np.frombuffer(gpu.read(buf, n * 4) if n else b"", np.float32).reshape(t, heads, d)

    qo, ko = back(qb, n_q), back(kb, h - n_q)
    return np.concatenate([qo, ko], axis=1)


def rope_reference(x: Any, pos_base: int, base: float, *, neox: bool, n_rot: int | None = None,
                   norm_w: Any = None, n_q: int = 0, eps: float = 1e-6) -> Any:
    """Float64 oracle: x (t, heads, head_dim)."""
    x = np.array(x, np.float64)
    t, h, d = x.shape
    n_rot = n_rot or d
    if norm_w is not None:
        nw = np.asarray(norm_w, np.float64).reshape(2, d)
        x = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
        x = x * np.where(np.arange(h)[:, None] < n_q, nw[0], nw[1])
    pos = (pos_base + np.arange(t, dtype=np.float64))[:, None, None]
    theta = pos * base ** (-2.0 * np.arange(n_rot // 2) / n_rot)
    c, s = np.cos(theta), np.sin(theta)
    out = x.copy()
    if neox:
        a, b = x[..., : n_rot // 2], x[..., n_rot // 2 : n_rot]
        out[..., : n_rot // 2], out[..., n_rot // 2 : n_rot] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2], out[..., 1:n_rot:2] = a * c - b * s, a * s + b * c
    return out


def swiglu_run(gpu: Any, gate_up: Any) -> Any:
    """(t, 2f) -> (t, f)."""
    x = np.ascontiguousarray(gate_up, np.float32)
    t, f2 = x.shape
    y = gpu.buffer(t * f2 // 2 * 4)
    swiglu.dispatch(gpu, gpu.upload(x), y, gpu.upload(swiglu.params(t, f2 // 2, f2, f2 // 2)), t, f2 // 2)
    return np.frombuffer(gpu.read(y, t * f2 // 2 * 4), np.float32).reshape(t, f2 // 2)


def swiglu_reference(gate_up: Any) -> Any:
    """Float64 oracle: silu(gate) * up of (t, 2f) = [gate | up]."""
    x = np.asarray(gate_up, np.float64)
    g, u = np.split(x, 2, axis=-1)
    return g / (1 + np.exp(-g)) * u


def argmax_run(gpu: Any, x: Any) -> int:
    """Index of the largest value of a float32 row (lowest index on ties), on the GPU."""
    x = np.ascontiguousarray(x, np.float32)
    out = gpu.buffer(16)
    argmax.dispatch(gpu, gpu.upload(x), out, gpu.upload(argmax.params(x.size)))
    return int(np.frombuffer(gpu.read(out, 4), np.uint32)[0])
