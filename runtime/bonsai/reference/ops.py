"""The transformer's building blocks in float32 numpy: RMSNorm, RoPE, causal GQA attention, SwiGLU."""

from __future__ import annotations

import numpy as np


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    ms = np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32)
    return (x / np.sqrt(ms + np.float32(eps)) * weight).astype(np.float32)


def rope_angles(positions: np.ndarray, head_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin [n, head_dim/2] of position p for pair i: p * theta^(-2i/head_dim)."""
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = positions.astype(np.float64)[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, neox: bool) -> np.ndarray:
    """Rotate x [n, heads, head_dim]; normal mode pairs (2i, 2i+1), NEOX pairs (i, i + head_dim/2)."""
    half = x.shape[-1] // 2
    if neox:
        a, b = x[..., :half], x[..., half:]
    else:
        a, b = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    ra, rb = a * c - b * s, a * s + b * c
    out = np.empty_like(x)
    if neox:
        out[..., :half], out[..., half:] = ra, rb
    else:
        out[..., 0::2], out[..., 1::2] = ra, rb
    return out


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, q_start: int) -> np.ndarray:
    """Causal GQA attention: q [n, heads, hd] at positions q_start.., k/v [t, kv_heads, hd] at 0..t-1.

    Returns [n, heads, hd]. Query head h reads KV head h // (heads / kv_heads).
    """
    n, heads, hd = q.shape
    t, kv_heads, _ = k.shape
    group = heads // kv_heads
    qg = q.reshape(n, kv_heads, group, hd).transpose(1, 2, 0, 3)  # [kv, group, n, hd]
    kt = k.transpose(1, 2, 0)  # [kv, hd, t]
    scores = (qg @ kt[:, None]) / np.float32(np.sqrt(hd))  # [kv, group, n, t]
    q_pos = q_start + np.arange(n)[:, None]
    scores = np.where(np.arange(t)[None, :] <= q_pos, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    out = p @ v.transpose(1, 0, 2)[:, None]  # [kv, group, n, hd]
    return out.transpose(2, 0, 1, 3).reshape(n, heads, hd).astype(np.float32)


def swiglu(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """silu(gate) * up."""
    return (gate / (np.float32(1) + np.exp(-gate)) * up).astype(np.float32)
