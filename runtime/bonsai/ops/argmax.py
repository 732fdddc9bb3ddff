"""GPU argmax of a logits row, so greedy decoding reads back 4 bytes instead of the vocabulary."""

from __future__ import annotations

import struct
from typing import Any

WG = 256


def params(n: int, offset: int = 0) -> bytes:
    return struct.pack("<4I", n, offset, 0, 0)


def dispatch(gpu: Any, x: Any, out: Any, prm: Any, hist: Any) -> None:
    """Record out[0] = out[1 + hist[0]] = argmax of the row (`params`); `out` holds 1 + the history's length."""
    gpu.dispatch(gpu.kernel(__package__, "argmax.wgsl", WG=WG), [x, out, prm, hist], 1)
