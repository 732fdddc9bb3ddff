"""How exactly this adapter rotates (RoPE): the runtime's rope kernel against float64 Python, per position.

WGSL lets sin and cos err by up to 2^-11 (absolute), and SwiftShader used that room (~2e-4 at every
position, bench/NOTES.md), so the kernel now takes cos/sin from the host's float64 table
(`bonsai.ops.rope.angle_rows`): what is left is a few f32 roundings at every position, on any adapter.
"""

from __future__ import annotations

import math
import struct
from typing import Any

HEAD_DIM = 64
THETA = 100000.0  # the default model's rope.freq_base
POSITIONS = (5, 100, 500, 1100)


def run(gpu: Any) -> dict:
    """Max |kernel - float64| over one 64-wide head of unit-scale values, at each of POSITIONS."""
    from bonsai.ops import rope

    vals = [math.sin(i * 0.37) for i in range(HEAD_DIM)]
    errors = {}
    for pos in POSITIONS:
        q = gpu.upload(struct.pack(f"<{HEAD_DIM}f", *vals))
        prm = gpu.upload(rope.params(1, HEAD_DIM, HEAD_DIM, pos, 1) + rope.angle_rows(pos, 1, HEAD_DIM, THETA))
        rope.dispatch(gpu, q, gpu.buffer(16), gpu.buffer(16), prm, 1, 1, neox=False, qk_norm=False, head_dim=HEAD_DIM)
        got = struct.unpack(f"<{HEAD_DIM}f", gpu.read(q, 4 * HEAD_DIM))
        worst = 0.0
        for pair in range(HEAD_DIM // 2):
            angle = pos * THETA ** (-2.0 * pair / HEAD_DIM)
            c, s = math.cos(angle), math.sin(angle)
            a, b = vals[2 * pair], vals[2 * pair + 1]
            worst = max(worst, abs(got[2 * pair] - (a * c - b * s)), abs(got[2 * pair + 1] - (a * s + b * c)))
        errors[str(pos)] = worst
    return {"ok": True, "max_error_by_position": errors}
