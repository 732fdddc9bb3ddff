"""RMSNorm over the rows of an activation buffer (the pre-attention, pre-FFN and final norms)."""

from __future__ import annotations

import struct
from typing import Any

WG = 64


def params(rows: int, dim: int, x_stride: int, y_stride: int, eps: float) -> bytes:
    return struct.pack("<4If3I", rows, dim, x_stride, y_stride, eps, 0, 0, 0)


def dispatch(gpu: Any, x: Any, w: Any, y: Any, prm: Any, rows: int) -> None:
    """Record y[r] = rmsnorm(x[r]) * w for `rows` rows; `prm` holds `params(...)`."""
    gpu.dispatch(gpu.kernel(__package__, "rmsnorm.wgsl", WG=WG), [x, w, y, prm], rows)
