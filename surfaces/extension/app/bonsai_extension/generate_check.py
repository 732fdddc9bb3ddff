"""Greedy generation in the page: the runtime's Engine on BrowserGpu, tokens and tokens/s reported.

The tokens are compared with the native runtime's by the test that opens the page; this module only
produces them, with the same Engine, tokenizer and settings as natively.
"""

from __future__ import annotations

import time
from typing import Any

from .model_check import open_model


def run(gpu: Any, path: str, name: str, prompt: str, max_tokens: int) -> dict:
    """Load the model onto `gpu`, encode `prompt`, greedily decode `max_tokens` tokens."""
    from bonsai.config import ModelConfig
    from bonsai.engine import Engine, Sampling  # the engine itself; it must run without numpy here

    started = time.perf_counter()
    reader = open_model(path, name)
    engine = Engine(reader, ModelConfig.from_gguf(reader), gpu, progress=False, max_positions=64)
    loaded = time.perf_counter() - started
    prompt_ids = engine.tokenizer.encode(prompt)
    gen = engine.generate(prompt_ids, max_tokens=max_tokens, sampling=Sampling())
    return {
        "ok": True,
        "prompt_ids": prompt_ids,
        "tokens": gen.tokens,
        "text": engine.tokenizer.decode(gen.tokens),
        "load_s": round(loaded, 3),
        "prefill_s": round(gen.prefill_s, 3),
        "decode_tokens_per_s": round(gen.decode_tokens_per_s, 3),
    }
