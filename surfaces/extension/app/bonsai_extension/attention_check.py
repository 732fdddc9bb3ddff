"""Attention exactness on whatever GPU backend it is given: windowed == whole, bit for bit, pure Python.

The runtime's invariant (DESIGN.md, "attention"): positions are folded into the online-softmax state
one at a time in increasing order and `acc` is divided by `l` once at the end, so splitting the cache
into windows of any size cannot change a single bit of the output. This check runs the same kernel
over the whole cache in one dispatch and over several window splits, on random data, and compares
the raw f32 bits. `mutate="drop_window_start"` builds the kernel with a bug that skips the first
position of each window; the check must then report a mismatch.
"""

from __future__ import annotations

import hashlib
import random
import struct
from array import array
from typing import Any

PACKAGE = "bonsai_extension"
MUTATIONS = ("", "drop_window_start")


def _random_floats(rng: random.Random, n: int) -> array:
    return array("f", (rng.uniform(-2.0, 2.0) for _ in range(n)))


def _attend(gpu: Any, kernel: Any, q: Any, k: Any, v: Any, bounds: list[int], n_heads: int, head_dim: int) -> bytes:
    """Fold positions window by window (`bounds` = [0, b1, ..., n]) and return the output's bytes."""
    ml = gpu.upload(array("f", [-3.4028234663852886e38, 0.0] * n_heads))
    acc = gpu.buffer(4 * n_heads * head_dim)
    for i, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False)):
        last = int(i == len(bounds) - 2)
        params = gpu.upload(struct.pack("<5I", start, end, n_heads, head_dim, last) + b"\0" * 12)
        gpu.dispatch(kernel, [params, q, k, v, ml, acc], n_heads)
    return gpu.read(acc, 4 * n_heads * head_dim)


def _splits(rng: random.Random, positions: int, count: int) -> list[list[int]]:
    """Window boundaries: fixed sizes 1 and 7, plus `count` random splits."""
    out = [list(range(positions + 1)), [*range(0, positions, 7), positions]]
    for _ in range(count):
        cuts = sorted(rng.sample(range(1, positions), rng.randint(1, min(6, positions - 1))))
        out.append([0, *cuts, positions])
    return out


def run(gpu: Any, *, seed: int = 0, positions: int = 40, n_heads: int = 3, head_dim: int = 16,
        random_splits: int = 3, mutate: str = "") -> dict:
    """Compare whole-cache attention with windowed attention; a dict describing the outcome."""
    if mutate not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutate!r}; known: {', '.join(m for m in MUTATIONS if m)}")
    rng = random.Random(seed)
    kernel = gpu.kernel(PACKAGE, "probe_attention.wgsl", DROP_WINDOW_START=mutate == "drop_window_start")
    q = gpu.upload(_random_floats(rng, n_heads * head_dim))
    k = gpu.upload(_random_floats(rng, positions * n_heads * head_dim))
    v = gpu.upload(_random_floats(rng, positions * n_heads * head_dim))
    whole = _attend(gpu, kernel, q, k, v, [0, positions], n_heads, head_dim)
    mismatches = []
    splits = _splits(rng, positions, random_splits)
    for bounds in splits:
        got = _attend(gpu, kernel, q, k, v, bounds, n_heads, head_dim)
        if got != whole:
            words = [i for i in range(0, len(got), 4) if got[i:i + 4] != whole[i:i + 4]]
            mismatches.append({"windows": len(bounds) - 1, "words_differing": len(words)})
    return {
        "ok": not mismatches,
        "kernel": f"{PACKAGE}/probe_attention.wgsl",
        "mutate": mutate,
        "positions": positions,
        "splits_checked": len(splits),
        "mismatches": mismatches,
        "whole_sha": _digest(whole),
    }


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
