"""A ToolLoop `generate` function on the GPU engine: logits come to the host, get masked, get sampled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def stop_ids_for(tokenizer: Any, eos_id: int | None) -> set[int]:
    """End-of-turn ids: the model's EOS plus ChatML's `<|im_end|>` and `<|endoftext|>` when present."""
    ids = {eos_id} if eos_id is not None else set()
    for name in ("<|im_end|>", "<|endoftext|>"):
        tid = tokenizer.token_id(name)
        if tid is not None:
            ids.add(tid)
    return ids


def engine_generate(engine: Any, max_tokens: int = 128, sampling: Any = None) -> Callable[..., list[int]]:
    """`generate(prompt_ids, processor, on_token)` for ToolLoop, on a bonsai.engine.Engine.

    The KV cache of the previous step is kept up to the longest common prefix (a loop step's
    prompt extends the last one). Each step reads the last row of logits, lets `processor` (if any) mask it, samples with
    `sampling` (greedy by default), and feeds the token back. Stops at an end-of-turn token.
    """
    from ..engine.sampler import Sampling, last_row, sample

    s = sampling or Sampling()
    stops = stop_ids_for(engine.tokenizer, engine.cfg.eos_id)

    def generate(prompt_ids: list[int], processor: Any, on_token: Callable[[int], None]) -> list[int]:
        rng = s.rng()
        todo = engine.continue_with(list(prompt_ids))  # reuses the KV of the longest common prefix
        logits = last_row(engine.prefill(todo))
        out: list[int] = []
        for _ in range(max_tokens):
            row = processor.apply(logits) if processor is not None else logits
            tok = sample(row, s, rng)
            if tok in stops:
                break
            if processor is not None:
                processor.accept(tok)
            out.append(tok)
            on_token(tok)
            if engine.pos >= engine.max_positions:
                break
            logits = last_row(engine.prefill([tok]))
        return out

    return generate
