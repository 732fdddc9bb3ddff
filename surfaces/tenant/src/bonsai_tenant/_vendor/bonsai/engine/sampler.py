"""Choosing the next token from logits on the host: greedy, temperature, top-k, top-p, seeded (pure Python)."""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any


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

    def rng(self) -> random.Random:
        """A fresh generator for one generation: the same seed gives the same draws."""
        return random.Random(self.seed)


def last_row(logits: Any) -> Any:
    """The last row of (rows, vocab) logits: a 1-D f32 memoryview (or row -1 of an array)."""
    if isinstance(logits, memoryview):
        flat = logits.cast("B").cast("f")
        vocab = logits.shape[-1] if logits.shape else len(flat)
        return flat[len(flat) - vocab :]
    return logits[-1]


def _floats(logits: Any) -> list[float]:
    tolist = getattr(logits, "tolist", None)  # memoryviews and arrays: one C-level conversion
    return [float(x) for x in (tolist() if tolist is not None else logits)]


def sample(logits: Any, s: Sampling, rng: random.Random) -> int:
    """One token id from a (vocab,) logits row (floats: a memoryview, a list, an array row)."""
    z = _floats(logits)
    if s.greedy:
        return z.index(max(z))  # the first maximum, as np.argmax
    order: Sequence[int]
    if s.top_k > 0:  # the k largest, highest first; ties keep the lower id first
        order = heapq.nlargest(s.top_k, range(len(z)), key=z.__getitem__)
    elif s.top_p < 1.0:
        order = sorted(range(len(z)), key=z.__getitem__, reverse=True)  # stable: ties by id
    else:
        order = range(len(z))  # no truncation: draw over the whole row in id order
    top = max(z[i] for i in order)
    cum = list(accumulate(math.exp((z[i] - top) / s.temperature) for i in order))
    keep = len(cum)
    if s.top_p < 1.0:  # the smallest prefix whose mass reaches top_p
        keep = min(keep, bisect_left(cum, s.top_p * cum[-1]) + 1)
    pick = bisect_right(cum, rng.random() * cum[keep - 1], 0, keep)
    return order[min(pick, keep - 1)]
