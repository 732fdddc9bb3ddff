"""Choosing the next token from logits on the host: greedy, temperature, top-k, top-p, seeded."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Sampling:
    """temperature 0 = greedy (argmax; ties to the lowest id). top_k 0 = off, top_p 1.0 = off."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


def sample(logits: np.ndarray, s: Sampling, rng: np.random.Generator) -> int:
    """One token id from a (vocab,) logits row."""
    if s.greedy:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / s.temperature
    order = np.argsort(-z, kind="stable")
    if s.top_k > 0:
        order = order[: s.top_k]
    z = z[order]
    p = np.exp(z - z[0])
    p /= p.sum()
    if s.top_p < 1.0:
        keep = int(np.searchsorted(np.cumsum(p), s.top_p) + 1)  # smallest prefix with mass >= top_p
        order, p = order[:keep], p[:keep] / p[:keep].sum()
    return int(order[rng.choice(len(p), p=p)])
