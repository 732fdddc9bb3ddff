"""Test oracle: a numpy forward of a whole llama/qwen3 GGUF over a token sequence (causal, no cache).

Weights are dequantised by `gguf.quants.dequantize` (the independent oracle), one layer at a time.
"""

from __future__ import annotations

import numpy as np
from gguf import GGUFReader, quants


def _w(reader: GGUFReader, name: str) -> np.ndarray:
    t = next(t for t in reader.tensors if t.name == name)
    w = quants.dequantize(t.data, t.tensor_type)
    return np.asarray(w, np.float64).reshape([int(d) for d in reversed(t.shape)] if len(t.shape) > 1 else -1)


def _field(reader: GGUFReader, key: str):
    f = reader.fields[key]
    return f.contents()


def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x, pos, base, neox):  # x (t, h, d)
    d = x.shape[-1]
    theta = pos[:, None, None] * base ** (-2.0 * np.arange(d // 2) / d)
    c, s = np.cos(theta), np.sin(theta)
    out = x.copy()
    if neox:
        a, b = x[..., : d // 2], x[..., d // 2 :]
        out[..., : d // 2], out[..., d // 2 :] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., 0::2], x[..., 1::2]
        out[..., 0::2], out[..., 1::2] = a * c - b * s, a * s + b * c
    return out


def forward(path, ids: list[int], kv_roundtrip=None) -> np.ndarray:
    """Logits (len(ids), vocab) in float64 for tokens at positions 0..len(ids)-1.

    `kv_roundtrip(rows) -> rows` (optional) is applied to K (after RoPE) and V, e.g. 4-bit quantisation.
    """
    r = GGUFReader(path)
    arch = _field(r, "general.architecture")
    g = lambda k: _field(r, f"{arch}.{k}")  # noqa: E731
    n_layers, n_heads = g("block_count"), g("attention.head_count")
    n_kv, eps, base = g("attention.head_count_kv"), g("attention.layer_norm_rms_epsilon"), g("rope.freq_base")
    neox = arch == "qwen3"
    emb = _w(r, "token_embd.weight")
    x = emb[ids]
    t = len(ids)
    pos = np.arange(t, dtype=np.float64)
    mask = np.triu(np.full((t, t), -np.inf), 1)
    names = {tt.name for tt in r.tensors}
    for i in range(n_layers):
        p = f"blk.{i}."
        h = _rms(x, _w(r, p + "attn_norm.weight"), eps)
        q = (h @ _w(r, p + "attn_q.weight").T).reshape(t, n_heads, -1)
        k = (h @ _w(r, p + "attn_k.weight").T).reshape(t, n_kv, -1)
        v = (h @ _w(r, p + "attn_v.weight").T).reshape(t, n_kv, -1)
        if p + "attn_q_norm.weight" in names:
            q = _rms(q, _w(r, p + "attn_q_norm.weight"), eps)
            k = _rms(k, _w(r, p + "attn_k_norm.weight"), eps)
        q, k = _rope(q, pos, base, neox), _rope(k, pos, base, neox)
        if kv_roundtrip is not None:
            k, v = kv_roundtrip(k), kv_roundtrip(v)
        d = q.shape[-1]
        rep = n_heads // n_kv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(d) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        att = np.einsum("hts,shd->thd", s, v).reshape(t, -1)
        x = x + att @ _w(r, p + "attn_output.weight").T
        h = _rms(x, _w(r, p + "ffn_norm.weight"), eps)
        gate, up = h @ _w(r, p + "ffn_gate.weight").T, h @ _w(r, p + "ffn_up.weight").T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ _w(r, p + "ffn_down.weight").T
    x = _rms(x, _w(r, "output_norm.weight"), eps)
    out = _w(r, "output.weight") if "output.weight" in names else emb
    return x @ out.T
