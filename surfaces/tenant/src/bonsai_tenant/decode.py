"""One request's token loop on the GPU engine: chunked prefill, masks, seeded sampling, logprobs, cancel.

`engine_generate(engine)` returns `generate(prompt_ids, settings, processor, on_token, cancelled)`:
it feeds the prompt in the engine's batches (checking `cancelled()` between them, so a client that
leaves during a long prefill stops it), then samples at most `settings.max_tokens` tokens. Each
step masks the logits through `processor` (constrained tool calls, JSON), samples with the
request's temperature/top_p/seed, and calls `on_token(id, logprob)`; logprob is None unless asked.
"""

from __future__ import annotations

import heapq
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._vendor.bonsai.engine import Sampling, last_row, sample
from ._vendor.bonsai.toolcall.engine_generate import stop_ids_for

# on_token(token_id, logprob or None); raising stops the loop (the consumer went away)
OnToken = Callable[[int, "Logprob | None"], None]
GenerateFn = Callable[[list[int], "DecodeSettings", Any, OnToken, Callable[[], bool]], list[int]]


class Cancelled(Exception):
    """The request was cancelled (client gone, time limit): stop generating."""


@dataclass(frozen=True)
class DecodeSettings:
    """How to pick tokens for one request."""

    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None  # None: a fresh random seed (OpenAI's default); an int repeats its draws
    logprobs: int | None = None  # None: off; k: each token's logprob and the k likeliest alternatives

    def sampling(self) -> Sampling:
        seed = self.seed if self.seed is not None else secrets.randbits(63)
        return Sampling(temperature=self.temperature, top_p=self.top_p, seed=seed)


@dataclass(frozen=True)
class Logprob:
    """A chosen token's log-probability under the model, and the likeliest alternatives (id, logprob)."""

    token_id: int
    logprob: float
    top: tuple[tuple[int, float], ...]


def logprob_of(row: Any, token_id: int, k: int) -> Logprob:
    """Log-softmax of the model's own logits row (before masks and temperature) at `token_id`, and the top k."""
    z = row.tolist() if hasattr(row, "tolist") else list(row)
    top = max(z)
    norm = top + math.log(math.fsum(math.exp(x - top) for x in z))
    best = heapq.nlargest(k, range(len(z)), key=z.__getitem__) if k else []
    return Logprob(token_id, z[token_id] - norm, tuple((i, z[i] - norm) for i in best))


def engine_generate(engine: Any) -> GenerateFn:
    """`generate` on a bonsai Engine (the caller resets its KV cache before each request)."""
    stops = stop_ids_for(engine.tokenizer, engine.cfg.eos_id)

    def prefill(ids: list[int], cancelled: Callable[[], bool]) -> Any:
        todo = engine.continue_with(list(ids))
        logits = None
        for start in range(0, len(todo), engine.batch):
            if cancelled():
                raise Cancelled
            batch = todo[start:start + engine.batch]
            if start + engine.batch >= len(todo):
                logits = engine.prefill(batch)
            else:
                engine.prefill_argmax(batch)  # an earlier batch: only its KV rows matter (4 bytes read)
        return last_row(logits)

    def generate(prompt_ids: list[int], settings: DecodeSettings, processor: Any, on_token: OnToken,
                 cancelled: Callable[[], bool]) -> list[int]:
        sampling = settings.sampling()
        rng = sampling.rng()
        row = prefill(prompt_ids, cancelled)
        out: list[int] = []
        while len(out) < settings.max_tokens:
            if cancelled():
                raise Cancelled
            masked = processor.apply(row) if processor is not None else row
            token = sample(masked, sampling, rng)
            if token in stops:
                break
            if processor is not None:
                processor.accept(token)
            out.append(token)
            on_token(token, logprob_of(row, token, settings.logprobs) if settings.logprobs is not None else None)
            if len(out) == settings.max_tokens or engine.pos >= engine.max_positions:
                break
            row = last_row(engine.prefill([token]))
        return out

    return generate
