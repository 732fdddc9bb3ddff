"""Greedy generation in the page: the runtime's Engine on BrowserGpu, tokens and tokens/s reported.

The tokens are compared with the native runtime's by the test that opens the page; this module only
produces them, with the same Engine, tokenizer and settings as natively.
"""

from __future__ import annotations

import time
from typing import Any

from .model_check import open_model

MAX_POSITIONS = 256  # room for a prompt that fills several 64-position groups (grouped KV modes)


def run(gpu: Any, path: str, name: str, prompt: str, max_tokens: int, kv: str = "q4", lose_after: int = 0) -> dict:
    """Load the model onto `gpu`, encode `prompt`, greedily decode `max_tokens` tokens (KV cache mode `kv`).

    lose_after > 0: destroy the device before decode step `lose_after`; the engine must notice the
    loss (`device.lost`), open a new device, rebuild from its host master and go on.
    """
    from bonsai.config import ModelConfig
    from bonsai.engine import Engine, Sampling  # the engine itself; it must run without numpy here

    started = time.perf_counter()
    reader = open_model(path, name)
    engine = Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=kv, progress=False, max_positions=MAX_POSITIONS)
    loaded = time.perf_counter() - started
    prompt_ids = engine.tokenizer.encode(prompt)
    def on_step(i: int) -> None:
        if lose_after and i + 1 == lose_after:
            engine.gpu.destroy()

    gen = engine.generate(prompt_ids, max_tokens=max_tokens, sampling=Sampling(), on_step=on_step)
    ended_at = time.time()
    return {
        "ok": True,
        "kv": kv,
        "adapter": gpu.description,
        "cpu_kernels": gpu.is_cpu,  # False: the kernels a GPU adapter gets (the page's kernels=gpu)
        "recoveries": len(gen.recoveries),
        "prompt_ids": prompt_ids,
        "tokens": gen.tokens,
        "text": engine.tokenizer.decode(gen.tokens),
        "load_s": round(loaded, 3),
        "prefill_s": round(gen.prefill_s, 3),
        "decode_tokens_per_s": round(gen.decode_tokens_per_s, 3),
        "decode_s": gen.decode_s,
        "decode_ended_at": ended_at,  # wall clock (epoch s): a benchmark outside the page can find the decode window
        "replayed_steps": engine.model.replays,  # decode steps replayed from the tape (no Python per op)
    }
