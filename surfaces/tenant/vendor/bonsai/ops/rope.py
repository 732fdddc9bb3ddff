"""Rotary position embedding (GGML normal or NEOX pairs), fused with qwen3's optional Q/K RMSNorm."""

from __future__ import annotations

import struct
from typing import Any

WG = 64


def params(n_heads: int, head_dim: int, n_rot: int, pos_base: int, base: float, n_q: int, eps: float = 0.0) -> bytes:
    """n_heads = Q heads + K heads; the first n_q are in the q buffer, the rest in the k buffer."""
    return struct.pack("<6IfIf3I", n_heads, head_dim, n_rot, 0, 0, pos_base, base, n_q, eps, 0, 0, 0)


def dispatch(gpu: Any, q: Any, k: Any, norm_w: Any, prm: Any, n_heads: int, t: int, *, neox: bool,
             qk_norm: bool) -> None:
    """Record RoPE in place on the Q and K heads (`n_heads` in all) of `t` tokens.

    `norm_w` is [q_norm | k_norm] (2 * head_dim f32) when qk_norm, else any buffer.
    """
    kern = gpu.kernel("bonsai.ops", "rope.wgsl", WG=WG, NEOX=neox, QK_NORM=qk_norm)
    gpu.dispatch(kern, [q, k, norm_w, prm], (n_heads, t))


def rope(gpu: Any, x: Any, pos_base: int, base: float, *, neox: bool, n_rot: int | None = None,
         norm_w: Any = None, n_q: int = 0, eps: float = 1e-6) -> Any:
    """Convenience for tests: numpy (t, heads, head_dim) -> rotated copy; heads < n_q go through the q
    buffer, the others through the k buffer (n_q=0: all heads are K heads)."""
    import numpy as np

    x = np.ascontiguousarray(x, np.float32)
    t, h, d = x.shape
    def up(a: Any) -> Any:
        return gpu.upload(a.copy() if a.size else np.zeros(4, np.float32))

    qb, kb = up(x[:, :n_q]), up(x[:, n_q:])
    w = gpu.upload(np.zeros(4, np.float32) if norm_w is None else np.asarray(norm_w, np.float32))
    prm = gpu.upload(params(h, d, n_rot or d, pos_base, base, n_q, eps))
    dispatch(gpu, qb, kb, w, prm, h, t, neox=neox, qk_norm=norm_w is not None)
    def back(buf: Any, heads: int) -> Any:
        n = t * heads * d
        return np.frombuffer(gpu.read(buf, n * 4) if n else b"", np.float32).reshape(t, heads, d)

    qo, ko = back(qb, n_q), back(kb, h - n_q)
    return np.concatenate([qo, ko], axis=1)


def reference(x: Any, pos_base: int, base: float, *, neox: bool, n_rot: int | None = None,
              norm_w: Any = None, n_q: int = 0, eps: float = 1e-6) -> Any:
    """Numpy oracle (float64): x (t, heads, head_dim)."""
    import numpy as np

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
