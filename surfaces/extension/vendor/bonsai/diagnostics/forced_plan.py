"""Long forced decoding's plan without numpy: the step schedule, the bars, and scoring logits rows in pure Python.

`long_forced` (numpy, native) and the browser extension's check (Pyodide, no numpy) both use it, so
both feed the same steps and score the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

TOKENS = 1100  # the issue-16 bar: several windows' worth, past the ~500 positions lavapipe once broke at
DECODE_TAIL = 4  # the last tokens go one at a time: the decode path at long positions
MIN_AGREEMENT = 0.99
MAX_LOGPROB_ERROR = 1e-3


def split_window(n: int) -> int:
    """A window that splits n positions in three (a multiple of 64: every grouped mode's group)."""
    return -(-n // 3 // 64) * 64


def schedule(n: int, batch: int, tail: int = DECODE_TAIL) -> list[tuple[int, int]]:
    """(start, end) of each step: batched chunks of `batch` tokens, then `tail` one-token steps."""
    head = max(0, n - tail)
    steps = [(s, min(s + batch, head)) for s in range(0, head, batch)]
    return steps + [(p, p + 1) for p in range(head, n)]


def score_row(row: Sequence[float], target: int) -> tuple[float, int]:
    """(log-prob of `target`, argmax id) of one row of logits: log-softmax in float64 (as the numpy
    reference's `log_probs`), the first maximum as numpy's argmax picks it."""
    values = list(row)
    top = max(values)
    total = math.fsum(math.exp(v - top) for v in values)
    return values[target] - top - math.log(total), values.index(top)
