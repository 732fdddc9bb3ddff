"""RMSNorm over the rows of an activation buffer (the pre-attention, pre-FFN and final norms)."""

from __future__ import annotations

import struct
from typing import Any

WG = 64


def params(rows: int, dim: int, x_stride: int, y_stride: int, eps: float) -> bytes:
    return struct.pack("<4If3I", rows, dim, x_stride, y_stride, eps, 0, 0, 0)


def dispatch(gpu: Any, x: Any, w: Any, y: Any, prm: Any, rows: int) -> None:
    """Record y[r] = rmsnorm(x[r]) * w for `rows` rows; `prm` holds `params(...)`."""
    gpu.dispatch(gpu.kernel("bonsai.ops", "rmsnorm.wgsl", WG=WG), [x, w, y, prm], rows)


def rmsnorm(gpu: Any, x: Any, w: Any, eps: float) -> Any:
    """Convenience for tests: numpy (rows, dim) -> (rows, dim) float32."""
    import numpy as np

    x = np.ascontiguousarray(x, np.float32)
    rows, dim = x.shape
    y = gpu.buffer(x.nbytes)
    dispatch(gpu, gpu.upload(x), gpu.upload(np.asarray(w, np.float32)), y,
             gpu.upload(params(rows, dim, dim, dim, eps)), rows)
    return np.frombuffer(gpu.read(y, x.nbytes), np.float32).reshape(rows, dim)


def reference(x: Any, w: Any, eps: float) -> Any:
    """Numpy oracle (float64)."""
    import numpy as np

    x = np.asarray(x, np.float64)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * np.asarray(w, np.float64)
