"""A ToolLoop `generate` function on the GPU engine: logits come to the host, get masked, get sampled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import BonsaiError


class GenerationStopped(BonsaiError):
    """`should_stop` answered True: the generation ended between two engine steps (the cache stays usable)."""


def stop_ids_for(tokenizer: Any, eos_id: int | None) -> set[int]:
    """End-of-turn ids: the model's EOS plus ChatML's `<|im_end|>` and `<|endoftext|>` when present."""
    ids = {eos_id} if eos_id is not None else set()
    for name in ("<|im_end|>", "<|endoftext|>"):
        tid = tokenizer.token_id(name)
        if tid is not None:
            ids.add(tid)
    return ids


class EngineGenerate:
    """`generate(prompt_ids, processor, on_token)` for ToolLoop, on a bonsai.engine.Engine.

    The KV cache of the previous step is kept up to the longest common prefix (a loop step's
    prompt extends the last one). The prompt is fed one engine batch at a time; then each step reads
    the last row of logits, lets `processor` (if any) mask it, samples with `sampling` (greedy by
    default), and feeds the token back. Stops at an end-of-turn token, after `max_tokens`, or at the
    end of the cache; `finish` then says which ("stop", "length", "context"). `should_stop` is asked
    between batches and between tokens: True raises GenerationStopped at a point where the engine's
    positions and its cache agree, so the next call goes on from the common prefix as usual.
    """

    def __init__(self, engine: Any, max_tokens: int = 128, sampling: Any = None,
                 should_stop: Callable[[], bool] | None = None) -> None:
        from ..engine.sampler import Sampling

        self.engine, self.max_tokens, self.sampling = engine, max_tokens, sampling or Sampling()
        self.should_stop = should_stop
        self.stops = stop_ids_for(engine.tokenizer, engine.cfg.eos_id)
        self.finish: str | None = None  # why the last call ended

    def _check(self) -> None:
        if self.should_stop is not None and self.should_stop():
            self.finish = "stopped"
            raise GenerationStopped("generation stopped")

    def _feed(self, ids: list[int]) -> Any:
        """Feed `ids` batch by batch (the engine's own boundaries, so the logits are the same bits)."""
        from ..engine.sampler import last_row

        batch = self.engine.batch
        logits = None
        for i in range(0, len(ids), batch):
            self._check()
            logits = self.engine.prefill(ids[i : i + batch])
        return last_row(logits)

    def __call__(self, prompt_ids: list[int], processor: Any, on_token: Callable[[int], None]) -> list[int]:
        from ..engine.sampler import sample

        engine, s = self.engine, self.sampling
        self.finish = None
        rng = s.rng()
        logits = self._feed(engine.continue_with(list(prompt_ids)))  # reuses the KV of the common prefix
        out: list[int] = []
        self.finish = "length"
        for _ in range(self.max_tokens):
            row = processor.apply(logits) if processor is not None else logits
            tok = sample(row, s, rng)
            if tok in self.stops:
                self.finish = "stop"
                break
            if processor is not None:
                processor.accept(tok)
            out.append(tok)
            on_token(tok)
            if engine.pos >= engine.max_positions:
                self.finish = "context"
                break
            if len(out) == self.max_tokens:
                break
            self._check()
            logits = self._feed([tok])
        return out


def engine_generate(engine: Any, max_tokens: int = 128, sampling: Any = None,
                    should_stop: Callable[[], bool] | None = None) -> EngineGenerate:
    """An EngineGenerate: ToolLoop's `generate` on `engine` (see the class)."""
    return EngineGenerate(engine, max_tokens, sampling, should_stop)
