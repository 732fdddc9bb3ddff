"""The tiled matmul's fusions for batches (matmul_tiled.wgsl NORM, ROPE): the norm within the product's bound of
the float64 RMSNorm-then-product, RoPE in the epilogue the bits of the product then rope.wgsl; mutants caught.

NORM stages each activation times its norm weight, sums x^2 from the staged values and scales each token's
products after the sum: |err| <= (cols + 16) * 2^-24 * sum |w| |normed x| (the product's f32 sum, the norm
weight's and the scale's roundings), on ragged shapes for both tiles the engine uses (two and four activation
items an invocation) and every output mode a norm precedes (plain, SwiGLU, the split QKV store).
"""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.ops import matmul as mm
from bonsai.ops import tiled
from bonsai.ops.qtypes import QTYPES
from tests.helpers import ops as host
from tests.helpers.shader_patch import patch_shader

from .conftest import quantized
from .test_rope_fusion import COLS
from .test_rope_fusion import _qkv as qkv

EPS, RMS_EPS = 2.0 ** -24, 1e-5


@pytest.fixture(autouse=True)
def tiled_on(monkeypatch):
    """Batches of ON_THRESHOLD tokens or more take the tiled kernel (the engine's setting)."""
    monkeypatch.setattr(tiled, "MIN_TOKENS", tiled.ON_THRESHOLD)


def _normed(x: np.ndarray, nw: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return x64 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + RMS_EPS) * nw.astype(np.float64)


def _inputs(t: int, cols: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Activations with a spread of token scales (so a wrong token's norm shows) and norm weights."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((t, cols)) * rng.uniform(0.2, 5.0, (t, 1))).astype(np.float32)
    return x, rng.uniform(0.5, 1.5, cols).astype(np.float32)


def _plain_within_bound(gpu, rows: int, cols: int, t: int, seed: int, tiny_first: bool = False) -> bool:
    """OUT 0 with NORM against the float64 norm-then-product (tiny_first: token 0's mean x^2 about eps, where
    1 / sqrt(mean) and 1 / sqrt(mean + eps) differ)."""
    raw = quantized("Q4_1", rows, cols, seed=seed)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q4_1"], rows, cols, texture=False)
    x, nw = _inputs(t, cols, seed)
    if tiny_first:
        x[0] *= np.float32(3e-3 / np.sqrt(np.mean(x[0].astype(np.float64) ** 2)))
    y = gpu.buffer(t * rows * 4)
    mm.dispatch(gpu, m, gpu.upload(x), y, gpu.upload(m.params(t, cols, rows, eps=RMS_EPS)), t, norm=gpu.upload(nw))
    got = np.frombuffer(gpu.read(y, t * rows * 4), np.float32).reshape(t, rows)
    w = host.dequantize(raw, QTYPES["Q4_1"], cols).astype(np.float64)
    xn = _normed(x, nw)
    bound = (cols + 16) * EPS * (np.abs(xn) @ np.abs(w).T)
    return bool(np.all(np.abs(got - xn @ w.T) <= bound))


@pytest.mark.parametrize("tile", [tiled.NARROW, tiled.WIDE], ids=["64x64x4", "64x64x8"])
@pytest.mark.parametrize(("rows", "cols", "t"), [(70, 96, 37), (130, 64, 70)])
def test_the_norm_in_the_tiled_product_is_within_its_bound(gpu, monkeypatch, tile, rows, cols, t):
    monkeypatch.setattr(tiled, "TILE", tile)
    assert _plain_within_bound(gpu, rows, cols, t, seed=rows + t)


def test_the_norm_in_swiglu_and_the_split_store(gpu, monkeypatch):
    """SwiGLU's gate and up both scaled; the split store's three parts each the plain product's rows."""
    monkeypatch.setattr(tiled, "TILE", tiled.WIDE)
    f, k, t = 37, 96, 45
    x, nw = _inputs(t, k, 5)
    xb, nb = gpu.upload(x), gpu.upload(nw)
    raw = quantized("Q4_1", 2 * f, k, seed=8)
    m = mm.upload_matrix(gpu, mm.interleave_rows(raw.tobytes(), f), QTYPES["Q4_1"], 2 * f, k, texture=False)
    y = gpu.buffer(t * f * 4)
    mm.dispatch(gpu, m, xb, y, gpu.upload(m.params(t, k, f, eps=RMS_EPS)), t, out=mm.OUT_SWIGLU, norm=nb)
    got = np.frombuffer(gpu.read(y, t * f * 4), np.float32).reshape(t, f)
    want = host.swiglu_reference(_normed(x, nw) @ host.dequantize(raw, QTYPES["Q4_1"], k).astype(np.float64).T)
    assert np.all(np.abs(got - want) <= 1e-5 * np.abs(want).max())

    n1, n2, n3 = 40, 9, 11
    raw = quantized("Q8_0", n1 + n2 + n3, k, seed=6)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q8_0"], n1 + n2 + n3, k, texture=False)
    plain = gpu.buffer(t * m.rows * 4)
    mm.dispatch(gpu, m, xb, plain, gpu.upload(m.params(t, k, m.rows, eps=RMS_EPS)), t, norm=nb)
    ys = [gpu.buffer(t * n * 4) for n in (n1, n2, n3)]
    mm.dispatch(gpu, m, xb, ys[0], gpu.upload(m.params(t, k, 0, n1=n1, n2=n2, eps=RMS_EPS)), t, out=mm.OUT_SPLIT,
                y2=ys[1], y3=ys[2], norm=nb)
    parts = [np.frombuffer(gpu.read(b, t * n * 4), np.float32).reshape(t, n) for b, n in zip(ys, (n1, n2, n3), strict=True)]
    whole = np.frombuffer(gpu.read(plain, t * m.rows * 4), np.float32).reshape(t, m.rows)
    assert np.array_equal(np.concatenate(parts, axis=1).view(np.uint32), whole.view(np.uint32))


NORM_MUTANTS = [
    ("the second item's x^2 taken from the first's", "dot(it.x1, it.x1)", "dot(it.x0, it.x0)", tiled.NARROW),
    ("the fourth item's x^2 left out (four items an invocation)", "dot(it.x3, it.x3)", "0.0", tiled.WIDE),
    ("each chunk staged with the first vector of its norm weights", "v * nw[c * 8u + i % 8u]", "v * nw[c * 8u]",
     tiled.NARROW),
    ("the second item's sum gathered to the first item's token", "put_square(li + WG, sq.y);",
     "put_square(li, sq.y);", tiled.NARROW),
    ("every token scaled by its group of four's first", "let scale = scales[j];",
     "let scale = scales[0];", tiled.NARROW),
    ("eps left out", "/ f32(p[1]) + bitcast<f32>(p[10]))", "/ f32(p[1]))", tiled.NARROW),
]


@pytest.mark.parametrize(("what", "old", "new", "tile"), NORM_MUTANTS, ids=[m[0] for m in NORM_MUTANTS])
def test_a_wrong_norm_in_the_tiled_product_is_caught(gpu, monkeypatch, what, old, new, tile):
    monkeypatch.setattr(tiled, "TILE", tile)
    assert _plain_within_bound(gpu, 70, 96, 70, seed=3) and _tiny_token_within_bound(gpu)
    patch_shader(monkeypatch, gpu, "matmul_tiled.wgsl", old, new)
    # 70 tokens: a whole tile of 64 (four items an invocation reach tokens 48..63) and a ragged one; eps shows only
    # where a token's mean x^2 is small (_tiny_token_within_bound)
    caught = not _plain_within_bound(gpu, 70, 96, 70, seed=3) or not _tiny_token_within_bound(gpu)
    assert caught, f"mutation not caught: {what}"


def _tiny_token_within_bound(gpu) -> bool:
    """The eps case: 33 tokens, token 0's activations scaled down to a mean x^2 about eps."""
    return _plain_within_bound(gpu, 8, 64, 33, seed=2, tiny_first=True)


def _same_bits(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(np.array_equal(u.view(np.uint32), w.view(np.uint32)) for u, w in zip(a, b, strict=True))


@pytest.mark.parametrize("tile", [tiled.NARROW, tiled.WIDE], ids=["64x64x4", "64x64x8"])
def test_rope_in_the_tiled_epilogue_gives_the_bits_of_the_rope_dispatch(gpu, monkeypatch, tile):
    monkeypatch.setattr(tiled, "TILE", tile)
    taken = []
    real = tiled.dispatch
    monkeypatch.setattr(tiled, "dispatch", lambda *a, **k: taken.append(k["rope_hd"]) or real(*a, **k))
    x = np.random.default_rng(4).standard_normal((37, COLS)).astype(np.float32)
    assert _same_bits(qkv(gpu, x, 900, True), qkv(gpu, x, 900, False))
    assert taken == [64, 0]  # both products on the tiled kernel, the first with RoPE in its epilogue


@pytest.mark.parametrize(("old", "new"), [
    ("rotated(rb + i, n1, t, a, b), rb + i < n1 + n2)", "rotated(rb + i, n1, t, a, b), rb + i < n)"),
    ("rotated(rb + i, n1, t, a, b)", "rotated(rb + i, n1, t0, a, b)"),
    ("let b = out[4u * g + i + 1u][j] * scale;", "let b = out[4u * g + i][j] * scale;"),
], ids=["V rows rotated too", "every token takes its tile's first token's angles", "a pair's second row from its first"])
def test_a_wrong_rotation_in_the_tiled_epilogue_is_caught(gpu, monkeypatch, old, new):
    monkeypatch.setattr(tiled, "TILE", tiled.WIDE)
    x = np.random.default_rng(9).standard_normal((40, COLS)).astype(np.float32)
    separate = qkv(gpu, x, 70, False)
    patch_shader(monkeypatch, gpu, "matmul_tiled.wgsl", old, new)
    assert not _same_bits(qkv(gpu, x, 70, True), separate)
