"""Rotary position embedding (GGML normal or NEOX pairs), fused with qwen3's optional Q/K RMSNorm.

The kernel takes cos/sin from the host, computed in float64 as the numpy reference does and rounded
once to f32 (`angle_rows`): WGSL lets `sin`/`cos` err by 2^-11 (SwiftShader's do, ~2e-4 at every
position; bench/NOTES.md), which moved log-probs by ~7e-3 over 1,100 tokens in the browser. A step's
rows ride in its parameter block, after the 12 header words, so nothing grows with the context.
"""

from __future__ import annotations

import math
import struct
from array import array
from typing import Any

WG = 64

PARAM_BYTES = 48  # the header `params` packs: 12 words; the step's (cos, sin) rows follow it


def params(n_heads: int, head_dim: int, n_rot: int, pos_base: int, n_q: int, eps: float = 0.0) -> bytes:
    """The header: n_heads = Q heads + K heads; the first n_q are in the q buffer, the rest in the k buffer."""
    if pos_base < 0:
        raise ValueError(f"RoPE at position {pos_base}")
    return struct.pack("<6I2If3I", n_heads, head_dim, n_rot, 0, 0, pos_base, 0, n_q, eps, 0, 0, 0)


def block_bytes(tokens: int, n_rot: int) -> int:
    """Bytes of a parameter block (header and rows) for steps of up to `tokens` tokens."""
    return PARAM_BYTES + tokens * (n_rot // 2) * 8


def angle_rows(start: int, count: int, n_rot: int, base: float) -> bytes:
    """(cos, sin) as f32 pairs for positions [start, start + count) x pairs [0, n_rot / 2): angle
    p * base^(-2i / n_rot) and its cos/sin in float64, rounded once to f32 (as the reference's
    `rope_angles`). Pure Python: the browser has no numpy."""
    inv_freq = [base ** (-(2 * i) / n_rot) for i in range(n_rot // 2)]
    out = array("f")
    for p in range(start, start + count):
        for f in inv_freq:
            a = p * f
            out.append(math.cos(a))
            out.append(math.sin(a))
    return out.tobytes()


class AngleTable:
    """`angle_rows` from position 0, computed once per position as steps reach it (doubling)."""

    def __init__(self, n_rot: int, base: float) -> None:
        self.n_rot, self.base = n_rot, base
        self._rows = b""

    def rows(self, pos: int, t: int) -> bytes:
        """The rows of positions [pos, pos + t)."""
        row = (self.n_rot // 2) * 8
        have = len(self._rows) // row
        if pos + t > have:
            more = max(pos + t, 2 * have, 256) - have
            self._rows += angle_rows(have, more, self.n_rot, self.base)
        return self._rows[pos * row: (pos + t) * row]


def dispatch(gpu: Any, q: Any, k: Any, norm_w: Any, prm: Any, n_heads: int, t: int, *, neox: bool,
             qk_norm: bool, head_dim: int) -> None:
    """Record RoPE in place on the Q and K heads (`n_heads` in all) of `t` tokens of `head_dim` (as in `prm`:
    `params` followed by the `angle_rows` of the t positions).

    `norm_w` is [q_norm | k_norm] (2 * head_dim f32) when qk_norm, else any buffer.
    """
    kern = gpu.kernel(__package__, "rope.wgsl", WG=WG, NEOX=neox, QK_NORM=qk_norm, HEAD_DIM=head_dim)
    gpu.dispatch(kern, [q, k, norm_w, prm], (n_heads, t))
