"""The numpy reference forward pass (llama, qwen3): the oracle the GPU engine and KV experiments check against.

API:
    m = ReferenceModel(path)                     # GGUF path; ModelConfig + tensor checks on load
    m.config                                     # bonsai.config.ModelConfig
    logits = m.forward(token_ids)                # [n, vocab] float32, causal over the sequence
    m.forward(ids, kv_transform=fn)              # fn(layer, k, v) -> (k, v), k/v [n, n_kv_heads,
                                                 #   head_dim], k after RoPE; applied before attention
    kv = []; m.forward(ids, capture_kv=kv)       # kv[layer] = (k, v) before kv_transform
    cache = m.new_cache(); m.forward(ids, cache=cache); m.forward([next_id], cache=cache)
    m.greedy(ids, n_new, stop=eos) -> list[int]  # KV-cached greedy continuation
    m.weight(name) -> float32 [out, in]          # dequantised once, cached
    perplexity(m, ids), log_probs(logits)
    dequantize(info, data), dequantize_q1_0, quantize_q1_0   # Q1_0: f16 d + 128 sign bits
Conventions: llama uses GGML "normal" RoPE (pairs 2i, 2i+1; the GGUF converter permuted Q/K rows),
qwen3 uses NEOX RoPE (pairs i, i + head_dim/2) after a per-head RMSNorm of Q and K. GQA, SwiGLU,
tied output when the file has no output.weight.
"""

from .forward import KVCache, KVTransform, ReferenceModel, log_probs, perplexity
from .quants import dequantize, dequantize_q1_0, dequantize_raw, quantize_q1_0

__all__ = [
    "KVCache",
    "KVTransform",
    "ReferenceModel",
    "dequantize",
    "dequantize_q1_0",
    "dequantize_raw",
    "log_probs",
    "perplexity",
    "quantize_q1_0",
]
