"""Rotary position embedding (GGML normal or NEOX pairs), fused with qwen3's optional Q/K RMSNorm."""

from __future__ import annotations

import struct
from typing import Any

WG = 64


PARAM_BYTES = 48  # the block `params` packs: 12 words


def params(n_heads: int, head_dim: int, n_rot: int, pos_base: int, base: float, n_q: int, eps: float = 0.0) -> bytes:
    """n_heads = Q heads + K heads; the first n_q are in the q buffer, the rest in the k buffer."""
    return struct.pack("<6IfIf3I", n_heads, head_dim, n_rot, 0, 0, pos_base, base, n_q, eps, 0, 0, 0)


def dispatch(gpu: Any, q: Any, k: Any, norm_w: Any, prm: Any, n_heads: int, t: int, *, neox: bool,
             qk_norm: bool, head_dim: int) -> None:
    """Record RoPE in place on the Q and K heads (`n_heads` in all) of `t` tokens of `head_dim` (as in `prm`).

    `norm_w` is [q_norm | k_norm] (2 * head_dim f32) when qk_norm, else any buffer.
    """
    kern = gpu.kernel(__package__, "rope.wgsl", WG=WG, NEOX=neox, QK_NORM=qk_norm, HEAD_DIM=head_dim)
    gpu.dispatch(kern, [q, k, norm_w, prm], (n_heads, t))
