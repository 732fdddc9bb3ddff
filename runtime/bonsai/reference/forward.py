"""The numpy reference forward pass of a whole llama / qwen3 GGUF model: the oracle for the GPU engine."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..config import ModelConfig, check_tensors, layer_tensor_names
from ..gguf import GGUFReader
from .ops import attention, rms_norm, rope, rope_angles, swiglu
from .quants import dequantize

# kv_transform(layer, k, v) -> (k, v); k, v: [n_new, n_kv_heads, head_dim] float32, k after RoPE.
KVTransform = Callable[[int, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class KVCache:
    """Per-layer keys and values of the positions processed so far (after any kv_transform)."""

    k: list[np.ndarray] = field(default_factory=list)  # per layer: [t, n_kv_heads, head_dim]
    v: list[np.ndarray] = field(default_factory=list)  # per layer: [t, n_kv_heads, head_dim]

    @property
    def length(self) -> int:
        """Number of cached positions."""
        return self.k[0].shape[0] if self.k else 0


class ReferenceModel:
    """A GGUF model in float32 numpy: `forward(token_ids) -> logits [n, vocab]`.

    Every weight is dequantised once, on first use, and kept.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.reader = GGUFReader(path)
        self.config = ModelConfig.from_gguf(self.reader)
        check_tensors(self.reader, self.config)
        self._weights: dict[str, np.ndarray] = {}

    def weight(self, name: str) -> np.ndarray:
        """Tensor `name` as float32 in numpy order ([out, in] for matrices), cached."""
        w = self._weights.get(name)
        if w is None:
            info = self.reader.tensor(name)
            w = self._weights[name] = dequantize(info, self.reader.tensor_data(name))
        return w

    def new_cache(self) -> KVCache:
        """An empty KV cache for incremental `forward` calls."""
        return KVCache()

    def forward(
        self,
        token_ids: Sequence[int],
        *,
        cache: KVCache | None = None,
        kv_transform: KVTransform | None = None,
        capture_kv: list[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> np.ndarray:
        """Logits [n, vocab] for `token_ids`, each attending causally to everything before it.

        cache: continue after the positions already in it (and append the new ones to it).
        kv_transform(layer, k, v): replaces the new K (post-RoPE) and V before attention and caching.
        capture_kv: per layer, (k, v) of the new positions *before* kv_transform are appended to it.
        """
        cfg = self.config
        ids = np.asarray(token_ids, dtype=np.int64)
        n = len(ids)
        start = cache.length if cache is not None else 0
        cos, sin = rope_angles(np.arange(start, start + n), cfg.head_dim, cfg.rope_theta)
        x = self.weight("token_embd.weight")[ids]  # [n, dim]
        for layer in range(cfg.n_layers):
            names = layer_tensor_names(cfg, layer)
            w = {role: self.weight(name) for role, name in names.items()}
            h = rms_norm(x, w["attn_norm"], cfg.rms_eps)  # [n, dim]
            q = (h @ w["attn_q"].T).reshape(n, cfg.n_heads, cfg.head_dim)
            k = (h @ w["attn_k"].T).reshape(n, cfg.n_kv_heads, cfg.head_dim)
            v = (h @ w["attn_v"].T).reshape(n, cfg.n_kv_heads, cfg.head_dim)
            if cfg.qk_norm:
                q = rms_norm(q, w["attn_q_norm"], cfg.rms_eps)
                k = rms_norm(k, w["attn_k_norm"], cfg.rms_eps)
            q = rope(q, cos, sin, cfg.rope_neox)
            k = rope(k, cos, sin, cfg.rope_neox)
            if capture_kv is not None:
                capture_kv.append((k.copy(), v.copy()))
            if kv_transform is not None:
                k, v = kv_transform(layer, k, v)
                k, v = np.asarray(k, np.float32), np.asarray(v, np.float32)
            if cache is not None:
                if len(cache.k) <= layer:
                    cache.k.append(k)
                    cache.v.append(v)
                else:
                    cache.k[layer] = np.concatenate([cache.k[layer], k])
                    cache.v[layer] = np.concatenate([cache.v[layer], v])
                k_all, v_all = cache.k[layer], cache.v[layer]
            else:
                k_all, v_all = k, v
            att = attention(q, k_all, v_all, start).reshape(n, cfg.q_dim)
            x = x + att @ w["attn_output"].T
            h = rms_norm(x, w["ffn_norm"], cfg.rms_eps)
            x = x + swiglu(h @ w["ffn_gate"].T, h @ w["ffn_up"].T) @ w["ffn_down"].T
        x = rms_norm(x, self.weight("output_norm.weight"), cfg.rms_eps)
        out = self.weight("token_embd.weight" if cfg.tied_output else "output.weight")
        return (x @ out.T).astype(np.float32)

    def greedy(self, token_ids: Sequence[int], n_new: int, stop: int | None = None) -> list[int]:
        """`n_new` greedy tokens after `token_ids` (KV-cached), stopping early at `stop`."""
        cache = self.new_cache()
        logits = self.forward(token_ids, cache=cache)
        out: list[int] = []
        for _ in range(n_new):
            nxt = int(np.argmax(logits[-1]))
            out.append(nxt)
            if nxt == stop:
                break
            logits = self.forward([nxt], cache=cache)
        return out


def log_probs(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64 (for perplexity)."""
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def perplexity(model: ReferenceModel, token_ids: Sequence[int]) -> float:
    """exp(mean negative log-likelihood) of token_ids[1:] under forced decoding."""
    ids = list(token_ids)
    lp = log_probs(model.forward(ids[:-1]))
    nll = -lp[np.arange(len(ids) - 1), ids[1:]]
    return float(np.exp(nll.mean()))
