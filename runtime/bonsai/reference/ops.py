"""The transformer's building blocks in numpy, the one reference each kernel is tested against.

Each function computes in its input's float dtype: the reference forward passes float32 (fast, close
to the GPU), the kernel tests pass float64 (an oracle with error far below the kernels').
"""

from __future__ import annotations

import numpy as np


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return (x / np.sqrt(ms + x.dtype.type(eps)) * weight).astype(x.dtype)


def rope_angles(positions: np.ndarray, n_rot: int, theta: float, dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin [n, n_rot/2] of position p for pair i: p * theta^(-2i/n_rot), computed in float64."""
    inv_freq = theta ** (-np.arange(0, n_rot, 2, dtype=np.float64) / n_rot)
    angles = np.asarray(positions, np.float64)[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, neox: bool) -> np.ndarray:
    """Rotate the first n_rot = 2 * cos.shape[-1] dims of x [n, heads, head_dim]; the rest pass through.

    Normal (GGML) mode pairs (2i, 2i+1), NEOX pairs (i, i + n_rot/2).
    """
    half = cos.shape[-1]
    n_rot = 2 * half
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = x.copy()
    if neox:
        out[..., :half], out[..., half:n_rot] = a * c - b * s, a * s + b * c
    else:
        out[..., 0:n_rot:2], out[..., 1:n_rot:2] = a * c - b * s, a * s + b * c
    return out


def rope_at(x: np.ndarray, pos_base: int, theta: float, neox: bool, n_rot: int | None = None) -> np.ndarray:
    """`rope` of x [n, heads, head_dim] whose rows sit at positions pos_base, pos_base + 1, ..."""
    cos, sin = rope_angles(pos_base + np.arange(x.shape[0]), n_rot or x.shape[-1], theta, x.dtype.type)
    return rope(x, cos, sin, neox)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, q_start: int) -> np.ndarray:
    """Causal GQA attention: q [n, heads, hd] at positions q_start.., k/v [t, kv_heads, hd] at 0..t-1.

    Returns [n, heads, hd]. Query head h reads KV head h // (heads / kv_heads).
    """
    n, heads, hd = q.shape
    t, kv_heads, _ = k.shape
    group = heads // kv_heads
    qg = q.reshape(n, kv_heads, group, hd).transpose(1, 2, 0, 3)  # [kv, group, n, hd]
    kt = k.transpose(1, 2, 0)  # [kv, hd, t]
    scores = (qg @ kt[:, None]) / q.dtype.type(np.sqrt(hd))  # [kv, group, n, t]
    q_pos = q_start + np.arange(n)[:, None]
    scores = np.where(np.arange(t)[None, :] <= q_pos, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    out = p @ v.transpose(1, 0, 2)[:, None]  # [kv, group, n, hd]
    return out.transpose(2, 0, 1, 3).reshape(n, heads, hd).astype(q.dtype)


def swiglu(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """silu(gate) * up."""
    return (gate / (gate.dtype.type(1) + np.exp(-gate)) * up).astype(gate.dtype)
