"""GPU kernels of the model: quantised matmul, embedding, RMSNorm, RoPE (+Q/K norm), SwiGLU, argmax.

Each op is one Python module (shapes, params, dispatch; pure Python, so the engine runs under
Pyodide) and one WGSL file. Their array front-ends and float64 references, the test oracles, live
together in `host`, which only tests, the reference model and benchmarks import. Attention and the
KV cache live in `bonsai.kv`; this package never reimplements them.
"""
