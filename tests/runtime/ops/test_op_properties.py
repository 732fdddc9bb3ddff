"""Every kernel against its one reference (`bonsai.reference`) over random shapes (hypothesis).

The tolerances, and why:
- matmul: the kernel sums cols products in f32 in its own order; recursive summation of n terms is
  off by at most (n - 1) * 2^-24 * sum|w x|, so |err| <= cols * 2^-24 * sum|w x| (+ 1e-30).
- embedding: exact (a dequantised row is an f16 scale times a small integer, exact in f32).
- rmsnorm: a sum of dim squares, a sqrt and a division: |err| <= (dim + 8) * 2^-24 * |ref| + 1e-6.
- rope: cos/sin come from the host's float64 table rounded to f32 (2^-24 relative each), then
  a*c - b*s in f32: |err| <= 2^-21 * max|x| + 1e-30 at every position (no growth with the angle).
- swiglu: silu(g) * u in a few f32 operations (exp within 2 ulp): |err| <= 1e-6 * |ref| + 1e-7.
- argmax: exact, the lowest index among equal maxima.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonsai.ops import matmul as mm
from bonsai.ops.qtypes import QTYPES
from tests.helpers import ops as host

from .conftest import quantized

pytestmark = pytest.mark.usefixtures("both_layouts")  # every test, with each matmul kernel

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
EPS = 2.0 ** -24


@SETTINGS
@given(name=st.sampled_from(["F32", "F16", "Q4_0", "Q4_1", "Q8_0", "Q1_0"]), rows=st.integers(1, 70),
       blocks=st.integers(1, 12), t=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_matmul_matches_the_reference(gpu, name, rows, blocks, t, seed):
    cols = blocks * (128 if name == "Q1_0" else 32)
    raw = quantized(name, rows, cols, seed=seed)
    x = np.random.default_rng(seed + 1).standard_normal((t, cols)).astype(np.float32)
    got = host.matmul_run(gpu, mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols), x)
    want = host.matmul_reference(raw, QTYPES[name], rows, cols, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(host.dequantize(raw, QTYPES[name], cols).astype(np.float64)).T
    assert np.all(np.abs(got - want) <= cols * EPS * scale + 1e-30)


@SETTINGS
@given(name=st.sampled_from(["F32", "F16", "Q4_0", "Q4_1", "Q8_0"]), vocab=st.integers(2, 90),
       blocks=st.integers(1, 6), n=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_embedding_is_the_reference_row(gpu, name, vocab, blocks, n, seed):
    cols = blocks * 32
    raw = quantized(name, vocab, cols, seed=seed)
    ids = np.random.default_rng(seed).integers(0, vocab, n)
    got = host.embed_run(gpu, mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], vocab, cols), ids)
    assert np.array_equal(got, host.dequantize(raw, QTYPES[name], cols)[ids])


@SETTINGS
@given(rows=st.integers(1, 9), dim=st.integers(1, 700), scale=st.floats(1e-3, 1e3), seed=st.integers(0, 2**16))
def test_rmsnorm_matches_the_reference(gpu, rows, dim, scale, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, dim)) * scale).astype(np.float32)
    w = rng.standard_normal(dim).astype(np.float32)
    got, want = host.rmsnorm_run(gpu, x, w, 1e-5), host.rmsnorm_reference(x, w, 1e-5)
    assert np.all(np.abs(got - want) <= (dim + 8) * EPS * np.abs(want) + 1e-6)


@SETTINGS
@given(t=st.integers(1, 6), heads=st.integers(1, 5), half=st.sampled_from([16, 32, 64]), pos=st.integers(0, 8192),
       neox=st.booleans(), seed=st.integers(0, 2**16))
def test_rope_matches_the_reference(gpu, t, heads, half, pos, neox, seed):
    x = np.random.default_rng(seed).standard_normal((t, heads, 2 * half)).astype(np.float32)
    got = host.rope_run(gpu, x, pos, 10000.0, neox=neox, n_q=heads // 2)
    want = host.rope_reference(x, pos, 10000.0, neox=neox)
    assert np.all(np.abs(got - want) <= 2.0 ** -21 * np.abs(x).max() + 1e-30)


@SETTINGS
@given(t=st.integers(1, 6), f=st.integers(1, 600), seed=st.integers(0, 2**16))
def test_swiglu_matches_the_reference(gpu, t, f, seed):
    x = (np.random.default_rng(seed).standard_normal((t, 2 * f)) * 4).astype(np.float32)
    got, want = host.swiglu_run(gpu, x), host.swiglu_reference(x)
    assert np.all(np.abs(got - want) <= 1e-6 * np.abs(want) + 1e-7)


@SETTINGS
@given(n=st.integers(1, 70000), ties=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_argmax_is_the_lowest_index_of_the_maximum(gpu, n, ties, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    for i in rng.integers(0, n, ties):
        x[i] = x.max()
    assert host.argmax_run(gpu, x) == int(np.argmax(x))
