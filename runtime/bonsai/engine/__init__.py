"""The GPU engine: GGUF weights on the GPU, prefill/decode forward, sampling, generation, recovery.

API:
    engine = Engine.load(path=None, kv="q4", window=256, vram_budget=None, max_positions=2048,
                         progress=True)                  # None -> the default model
    result = engine.generate(prompt_ids, max_tokens=64, sampling=Sampling(temperature=0.0, top_k=0,
                             top_p=1.0, seed=0), stop_ids=None, stop_strings=(), decode=None,
                             on_token=None)               # -> Generation(tokens, text, stop_reason,...)
    logits = engine.forward(ids, pos)                     # numpy (len(ids), vocab): logits of every token
    engine.reset()                                        # forget the KV cache (new conversation)
    engine.recover()                                      # new device, pipelines, weights, KV windows
"""

from .engine import Engine, Generation
from .sampler import Sampling, sample

__all__ = ["Engine", "Generation", "Sampling", "sample"]
