"""The q4r rotation: a fixed orthogonal (normalised Sylvester) Hadamard transform of each row.

Applied to K before quantising and to Q before attention, so q.k is unchanged in exact
arithmetic while outliers are spread across the row. The butterfly order below is the one the
WGSL kernels use (`rotate.wgsl`), so both give the same bits (f32 add/sub/mul are correctly
rounded in WGSL).
"""

from __future__ import annotations

import numpy as np


def hadamard(x: np.ndarray) -> np.ndarray:
    """Rows `x` [..., n] (n a power of two) times H_n / sqrt(n), computed in f32."""
    y = np.array(x, dtype=np.float32, copy=True)
    n = y.shape[-1]
    if n & (n - 1):
        raise ValueError(f"Hadamard rotation needs a power-of-two head_dim, got {n}")
    h = 1
    while h < n:
        y = y.reshape(*y.shape[:-1], n // (2 * h), 2, h)
        a, b = y[..., 0, :].copy(), y[..., 1, :].copy()
        y[..., 0, :] = a + b
        y[..., 1, :] = a - b
        y = y.reshape(*y.shape[:-3], n)
        h *= 2
    return y * np.float32(1.0 / np.sqrt(n))
