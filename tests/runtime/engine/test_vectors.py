"""Pure-Python norm-vector dequantisation: bit for bit the bytes the numpy reference gave the GPU."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.engine import norms as vectors
from bonsai.ops.qtypes import QTYPES
from tests.helpers.ops import dequantize

# f16 scales/mins at the edges: signed zeros, the smallest subnormal, the largest normal, and mixes
# whose d * q + m spans ~40 bits (tiny d, huge m), which a second rounding would get wrong
EDGES = np.array([0.0, -0.0, 2.0**-24, -(2.0**-24), 2.0**-14, 65504.0, -65504.0, 1.0, -3.5], np.float16)


def _blocks(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    q = QTYPES[name]
    raw = rng.integers(0, 256, size=(n, q.nbytes), dtype=np.uint8)
    if name == "F32":
        return rng.normal(size=(n, 1)).astype(np.float32).view(np.uint8)
    if name == "F16":
        return rng.normal(size=(n, 1)).astype(np.float16).view(np.uint8)
    d = np.concatenate([EDGES, rng.normal(size=n).astype(np.float16)])[:n]
    raw[:, 0:2] = d.reshape(n, 1).view(np.uint8)
    if name == "Q4_1":
        raw[:, 2:4] = np.roll(d, 3).reshape(n, 1).view(np.uint8)  # each min paired with another scale
    return raw


def _agrees(name: str) -> bool:
    q, rng = QTYPES[name], np.random.default_rng(len(name))
    raw = _blocks(name, 64 if q.block > 1 else 256, rng)
    ncols = raw.size // q.nbytes * q.block
    want = dequantize(raw.reshape(1, -1), q, ncols).tobytes()
    return vectors.f32_bytes(raw.tobytes(), q) == want


@pytest.mark.parametrize("name", sorted(QTYPES))
def test_f32_bytes_equal_the_numpy_reference_bit_for_bit(name):
    assert _agrees(name)


def _swapped_nibbles(block):
    def mutant(raw, at, q):
        w = block(raw, at, q)
        return w[16:] + w[:16] if q.name.startswith("Q4") else w
    return mutant


def _msb_first(block):
    def mutant(raw, at, q):
        w = block(raw, at, q)
        return [x for i in range(0, len(w), 8) for x in w[i : i + 8][::-1]] if q.name == "Q1_0" else w
    return mutant


def _rounded_twice(block):
    def mutant(raw, at, q):  # Q4_1 weights passed through f16: a lossy intermediate
        w = block(raw, at, q)
        with np.errstate(over="ignore"):
            return [float(np.float16(x)) for x in w] if q.name == "Q4_1" else w
    return mutant


@pytest.mark.parametrize("mutate,name", [(_swapped_nibbles, "Q4_0"), (_swapped_nibbles, "Q4_1"),
                                         (_msb_first, "Q1_0"), (_rounded_twice, "Q4_1")])
def test_an_injected_layout_or_rounding_bug_is_caught(monkeypatch, mutate, name):
    monkeypatch.setattr(vectors, "_block", mutate(vectors._block))
    assert not _agrees(name)
