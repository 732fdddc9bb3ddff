"""SwiGLU activation of the feed-forward block: silu(gate) * up."""

from __future__ import annotations

import struct
from typing import Any

WG = 64


def params(t: int, f: int, x_stride: int, y_stride: int) -> bytes:
    return struct.pack("<4I", t, f, x_stride, y_stride)


def dispatch(gpu: Any, x: Any, y: Any, prm: Any, t: int, f: int) -> None:
    """Record y[t, :f] = silu(x[t, :f]) * x[t, f:2f]; `prm` holds `params(...)`."""
    gpu.dispatch(gpu.kernel(__package__, "swiglu.wgsl", WG=WG), [x, y, prm], (-(-f // WG), t))
