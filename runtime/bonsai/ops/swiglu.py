"""SwiGLU activation of the feed-forward block: silu(gate) * up."""

from __future__ import annotations

import struct
from typing import Any

WG = 64


def params(t: int, f: int, x_stride: int, y_stride: int) -> bytes:
    return struct.pack("<4I", t, f, x_stride, y_stride)


def dispatch(gpu: Any, x: Any, y: Any, prm: Any, t: int, f: int) -> None:
    """Record y[t, :f] = silu(x[t, :f]) * x[t, f:2f]; `prm` holds `params(...)`."""
    gpu.dispatch(gpu.kernel("bonsai.ops", "swiglu.wgsl", WG=WG), [x, y, prm], (-(-f // WG), t))


def swiglu(gpu: Any, gate_up: Any) -> Any:
    """Convenience for tests: numpy (t, 2f) -> (t, f)."""
    import numpy as np

    x = np.ascontiguousarray(gate_up, np.float32)
    t, f2 = x.shape
    y = gpu.buffer(t * f2 // 2 * 4)
    dispatch(gpu, gpu.upload(x), y, gpu.upload(params(t, f2 // 2, f2, f2 // 2)), t, f2 // 2)
    return np.frombuffer(gpu.read(y, t * f2 // 2 * 4), np.float32).reshape(t, f2 // 2)


def reference(gate_up: Any) -> Any:
    import numpy as np

    x = np.asarray(gate_up, np.float64)
    g, u = np.split(x, 2, axis=-1)
    return g / (1 + np.exp(-g)) * u
