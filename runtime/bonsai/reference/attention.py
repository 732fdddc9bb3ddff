"""fp64 numpy causal GQA attention: the oracle the kv tests and measurements compare against."""

from __future__ import annotations

import numpy as np


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, pos_base: int) -> np.ndarray:
    """fp64 causal GQA attention: q [n_q, n_heads, hd], k/v [kv_len, n_kv, hd] (f32 values)."""
    n_q, n_heads, hd = q.shape
    n_kv = k.shape[1]
    group = n_heads // n_kv
    out = np.zeros((n_q, n_heads, hd), np.float64)
    for t in range(n_q):
        last = pos_base + t + 1
        for h in range(n_heads):
            kk = k[:last, h // group].astype(np.float64)
            s = kk @ q[t, h].astype(np.float64) / np.sqrt(hd)
            e = np.exp(s - s.max())
            out[t, h] = (e / e.sum()) @ v[:last, h // group].astype(np.float64)
    return out
