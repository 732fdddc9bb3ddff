"""Test scaffold: a host-side f32 KV cache with numpy attention, standing in for `bonsai.kv.KVCache`.

It exists only so the engine's own kernels can be checked independently of the real cache; the
engine runs on `bonsai.kv.KVCache` everywhere else.
"""

from __future__ import annotations

import numpy as np


class HostKV:
    def __init__(self, gpu, n_layers, n_kv, head_dim, max_positions, **_):
        self.gpu, self.n_kv, self.hd = gpu, n_kv, head_dim
        self.k = np.zeros((n_layers, max_positions, n_kv, head_dim), np.float32)
        self.v = np.zeros_like(self.k)

    def append(self, layer, k_buf, v_buf, pos, n):
        size = n * self.n_kv * self.hd * 4
        self.k[layer, pos : pos + n] = np.frombuffer(self.gpu.read(k_buf, size), np.float32).reshape(n, self.n_kv, -1)
        self.v[layer, pos : pos + n] = np.frombuffer(self.gpu.read(v_buf, size), np.float32).reshape(n, self.n_kv, -1)

    def attend(self, layer, q_buf, out_buf, pos_base, n_q, n_heads):
        q = np.frombuffer(self.gpu.read(q_buf, n_q * n_heads * self.hd * 4), np.float32).reshape(n_q, n_heads, -1)
        rep = n_heads // self.n_kv
        out = np.zeros_like(q)
        for i in range(n_q):
            k = np.repeat(self.k[layer, : pos_base + i + 1], rep, axis=1).astype(np.float64)
            v = np.repeat(self.v[layer, : pos_base + i + 1], rep, axis=1).astype(np.float64)
            s = np.einsum("hd,shd->hs", q[i], k) / np.sqrt(self.hd)
            s = np.exp(s - s.max(-1, keepdims=True))
            out[i] = np.einsum("hs,shd->hd", s / s.sum(-1, keepdims=True), v)
        self.gpu.write(out_buf, out.astype(np.float32))

    def sync_host(self):
        pass

    def restore(self, gpu):
        self.gpu = gpu

    def reset(self):
        pass
