"""GPU kernels of the model: quantised matmul, embedding, RMSNorm, RoPE (+Q/K norm), SwiGLU.

Each op is one Python module (shapes, params, a numpy reference) and one WGSL file. Attention and
the KV cache live in `bonsai.kv`; this package never reimplements them.
"""
