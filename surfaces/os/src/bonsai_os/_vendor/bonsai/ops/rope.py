"""Rotary position embedding (GGML normal or NEOX pairs), fused with qwen3's optional Q/K RMSNorm.

The kernel takes its cos/sin from a table the host computes once in float64 (`angle_table`), the
way the numpy reference does: WGSL lets `sin`/`cos` err by 2^-11 (SwiftShader's do, ~2e-4 at every
position; bench/NOTES.md), which moved log-probs by ~7e-3 over 1,100 tokens in the browser.
"""

from __future__ import annotations

import math
import struct
from array import array
from typing import Any

WG = 64


PARAM_BYTES = 48  # the block `params` packs: 12 words


def params(n_heads: int, head_dim: int, n_rot: int, pos_base: int, table_positions: int, n_q: int,
           eps: float = 0.0) -> bytes:
    """n_heads = Q heads + K heads; the first n_q are in the q buffer, the rest in the k buffer; the
    angle table covers positions [0, table_positions)."""
    if pos_base < 0:
        raise ValueError(f"RoPE at position {pos_base}")
    return struct.pack("<6I2If3I", n_heads, head_dim, n_rot, 0, 0, pos_base, table_positions, n_q, eps, 0, 0, 0)


def angle_table(positions: int, n_rot: int, base: float) -> bytes:
    """(cos, sin) as f32 pairs for positions [0, positions) x pairs [0, n_rot / 2): angle p * base^(-2i / n_rot)
    and its cos/sin in float64, rounded once to f32 (as `bonsai.reference.ops.rope_angles`)."""
    inv_freq = [base ** (-(2 * i) / n_rot) for i in range(n_rot // 2)]
    out = array("f")
    for p in range(positions):
        for f in inv_freq:
            a = p * f
            out.append(math.cos(a))
            out.append(math.sin(a))
    return out.tobytes()


def check_positions(pos_base: int, t: int, table_positions: int) -> None:
    """Refuse a step whose positions run past the angle table (it would read past the buffer)."""
    if pos_base + t > table_positions:
        raise ValueError(f"RoPE for positions [{pos_base}, {pos_base + t}): the angle table covers "
                         f"[0, {table_positions}) (the engine's max_positions)")


def dispatch(gpu: Any, q: Any, k: Any, norm_w: Any, table: Any, prm: Any, n_heads: int, t: int, *, neox: bool,
             qk_norm: bool, head_dim: int) -> None:
    """Record RoPE in place on the Q and K heads (`n_heads` in all) of `t` tokens of `head_dim` (as in `prm`).

    `norm_w` is [q_norm | k_norm] (2 * head_dim f32) when qk_norm, else any buffer; `table` holds
    `angle_table` for at least the step's positions.
    """
    kern = gpu.kernel(__package__, "rope.wgsl", WG=WG, NEOX=neox, QK_NORM=qk_norm, HEAD_DIM=head_dim)
    gpu.dispatch(kern, [q, k, norm_w, prm, table], (n_heads, t))
