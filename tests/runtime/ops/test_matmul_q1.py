"""The Q1_0 decode product (matmul.wgsl SPREAD): exact weights, the reference's bound, every fused epilogue."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.ops import matmul as mm
from bonsai.ops import rmsnorm
from bonsai.ops.qtypes import QTYPES
from tests.helpers import ops as host
from tests.helpers.ops import dequantize
from tests.helpers.shader_patch import patch_shader

from .conftest import quantized

Q1 = QTYPES["Q1_0"]
# every bit of a 32-weight chunk, every chunk of a 128-weight block, and the second block
COLUMNS = [*range(32), 37, 70, 101, 127, 130, 200, 255]



@pytest.fixture(autouse=True)
def spread(monkeypatch):
    """These tests are of the SPREAD product, which the runtime keeps off until it is timed on a GPU."""
    monkeypatch.setattr(mm, "Q1_SPREAD", True)


def _one_token(gpu, m, x, **kw):
    y = gpu.buffer(m.rows * 4)
    mm.dispatch(gpu, m, gpu.upload(np.ascontiguousarray(x, np.float32)), y, gpu.upload(m.params(1, m.cols, m.rows,
                **{k: v for k, v in kw.items() if k == "eps"})), 1, **{k: v for k, v in kw.items() if k != "eps"})
    return np.frombuffer(gpu.read(y, m.rows * 4), np.float32)


def _exact_columns(gpu, rows=5, cols=256) -> bool:
    """One token of a unit vector e_i gives column i of the dequantised matrix, bit for bit (sums of +-0 and +-d)."""
    raw = quantized("Q1_0", rows, cols, seed=61)
    m = mm.upload_matrix(gpu, raw.tobytes(), Q1, rows, cols, texture=False)
    want = dequantize(raw, Q1, cols)
    for i in COLUMNS:
        e = np.zeros(cols, np.float32)
        e[i] = 1.0
        if not np.array_equal(_one_token(gpu, m, e) + np.float32(0), want[:, i] + np.float32(0)):
            return False
    return True


def _within_bound(gpu, rows=37, cols=4096, seed=62) -> bool:
    """|err| <= 1e-5 * sum|w x| for every row of one token (x's chunks loop more than once: 128 chunks, 64 lanes)."""
    raw = quantized("Q1_0", rows, cols, seed=seed)
    x = np.random.default_rng(seed).standard_normal((1, cols)).astype(np.float32)
    m = mm.upload_matrix(gpu, raw.tobytes(), Q1, rows, cols, texture=False)
    got = host.matmul_run(gpu, m, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(dequantize(raw, Q1, cols).astype(np.float64)).T
    return bool(np.all(np.abs(got - host.matmul_reference(raw, Q1, rows, cols, x)) <= 1e-5 * scale + 1e-30))


@pytest.mark.parametrize("rows_per_group", [2, 16, 32])
def test_one_token_reads_exact_weights_and_stays_within_the_bound(gpu, monkeypatch, rows_per_group):
    """Every tile of rows per workgroup: exact dequantised columns, every row (37: not a multiple) in bound."""
    monkeypatch.setattr(mm, "Q1_ROWS", [(0, rows_per_group)])
    m = mm.upload_matrix(gpu, quantized("Q1_0", 4, 128).tobytes(), Q1, 4, 128, texture=False)
    assert mm.constants(m, 1)["SPREAD"] and m.lanes_at(1) == mm.WG // rows_per_group
    assert _exact_columns(gpu)
    assert _within_bound(gpu)


def test_rows_per_group_follow_the_table_by_matrix_height(monkeypatch):
    monkeypatch.setattr(mm, "Q1_ROWS", [(0, 4), (1000, 16), (100_000, 32)])
    assert [mm.q1_rows(r) for r in (8, 999, 1000, 151_936)] == [4, 4, 16, 32]


def test_fused_norm_swiglu_and_split_match_their_plain_forms(gpu):
    """NORM gives the bits of rmsnorm.wgsl then the product; SwiGLU and the QKV split match plain products."""
    rows, cols, f = 24, 512, 20
    raw = quantized("Q1_0", rows, cols, seed=63)
    m = mm.upload_matrix(gpu, raw.tobytes(), Q1, rows, cols, texture=False)
    x = np.random.default_rng(5).standard_normal(cols).astype(np.float32)
    nw = (1.0 + 0.1 * np.random.default_rng(6).standard_normal(cols)).astype(np.float32)
    normed = host.rmsnorm_run(gpu, x[None], nw, 1e-6)[0]
    assert rmsnorm.WG == mm.WG and mm.fuses_norm(m)
    fused = _one_token(gpu, m, x, norm=gpu.upload(nw), eps=1e-6)
    assert np.array_equal(fused.view(np.uint32), _one_token(gpu, m, normed).view(np.uint32))
    plain = _one_token(gpu, m, x)
    ys = [gpu.buffer(n * 4) for n in (12, 8, 4)]
    mm.dispatch(gpu, m, gpu.upload(x), ys[0], gpu.upload(m.params(1, cols, 0, n1=12, n2=8)), 1, out=mm.OUT_SPLIT,
                y2=ys[1], y3=ys[2])
    parts = [np.frombuffer(gpu.read(b, n * 4), np.float32) for b, n in zip(ys, (12, 8, 4), strict=True)]
    assert np.array_equal(np.concatenate(parts).view(np.uint32), plain.view(np.uint32))
    gu = quantized("Q1_0", 2 * f, cols, seed=64)
    sw = mm.upload_matrix(gpu, mm.interleave_rows(gu.tobytes(), f), Q1, 2 * f, cols, texture=False)
    y = gpu.buffer(f * 4)
    mm.dispatch(gpu, sw, gpu.upload(x), y, gpu.upload(sw.params(1, cols, f)), 1, out=mm.OUT_SWIGLU)
    want = host.swiglu_reference(host.matmul_reference(gu, Q1, 2 * f, cols, x[None]))[0]
    assert np.all(np.abs(np.frombuffer(gpu.read(y, f * 4), np.float32) - want) <= 1e-4 * np.abs(want).max())


SPREAD_MUTANTS = [  # (what, old, new, check)
    ("sign convention inverted", "let nq = ~word_at(rb + wo);", "let nq = word_at(rb + wo);", _exact_columns),
    ("two bits of a nibble swapped", "vec4<u32>(31u, 30u, 29u, 28u)", "vec4<u32>(31u, 30u, 28u, 29u)", _exact_columns),
    ("the block's scale of the wrong chunk", "let d = half_at(rb + off);", "let d = half_at(rb + wo - 2u);",
     _exact_columns),
    ("chunks past the first WG skipped", "c < k / 32u; c += WG)", "c < k / 32u; c += 2u * WG)", _within_bound),
    ("a row's last partial dropped", "for (var i = 0u; i < ROWS; i++) { s += red[base + i]; }",
     "for (var i = 1u; i < ROWS; i++) { s += red[base + i]; }", _within_bound),
    ("segments read with the wrong stride", "(li % LANES) * ROWS;", "(li % LANES) * (ROWS / 2u);", _within_bound),
]


@pytest.mark.parametrize("what,old,new,check", SPREAD_MUTANTS, ids=[m[0] for m in SPREAD_MUTANTS])
def test_spread_mutant_is_caught(gpu, monkeypatch, what, old, new, check):
    assert check(gpu), "the unmutated kernel must pass the check"
    patch_shader(monkeypatch, gpu, "matmul.wgsl", old, new)
    assert not check(gpu), f"mutation not caught: {what}"
