"""The tiled batch matmul (matmul_tiled.wgsl) against the float64 reference, on buffer matrices.

Random shapes cut every edge: rows not a multiple of BM, tokens not a multiple of BN (and fewer than one
tile), K an odd number of 32-weight chunks; every format, three tile shapes. Bounds as the op property
tests': the kernel sums cols products in f32 in its own order, |err| <= cols * 2^-24 * sum|w x|.
Dequantisation is exact (x = identity). Nothing outside the t x n output may be written.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonsai.ops import matmul as mm
from bonsai.ops import tiled
from bonsai.ops.qtypes import QTYPES
from tests.helpers import ops as host
from tests.helpers.shader_patch import patch_shader

from .conftest import quantized

TYPES = ["F32", "F16", "Q4_0", "Q4_1", "Q8_0", "Q1_0"]
TILES = [tiled.Tile(64, 64, 4), tiled.Tile(64, 64, 8), tiled.Tile(32, 32, 4), tiled.Tile(64, 32, 4)]
EPS = 2.0 ** -24
SENTINEL = np.float32(7.0)


@pytest.fixture(autouse=True)
def tiled_on(monkeypatch):
    """The tiled matmul switched on at its threshold (it is off by default, see ops/tiled.py)."""
    monkeypatch.setattr(tiled, "MIN_TOKENS", tiled.ON_THRESHOLD)


@pytest.fixture
def always_tiled(monkeypatch):
    """Every buffer matmul takes the tiled kernel, even for one token (small shapes keep lavapipe fast)."""
    monkeypatch.setattr(tiled, "MIN_TOKENS", 1)


def _upload(gpu, name, rows, cols, seed):
    raw = quantized(name, rows, cols, seed=seed)
    return raw, mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols, texture=False)


def _within_bound(raw, name, x, got):
    rows, cols = raw.shape[0], x.shape[1]
    want = host.matmul_reference(raw, QTYPES[name], rows, cols, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(host.dequantize(raw, QTYPES[name], cols).astype(np.float64)).T
    return bool(np.all(np.abs(got - want) <= cols * EPS * scale + 1e-30))


def _run_framed(gpu, m, x, *, y_off=3, extra_cols=5, extra_rows=2):
    """y (t, rows) written at column y_off of a wider (t + extra_rows, y_stride) buffer full of SENTINEL:
    (the product, everything else of the buffer) after the dispatch."""
    t = x.shape[0]
    ys = y_off + m.rows + extra_cols
    yb = gpu.upload(np.full((t + extra_rows, ys), SENTINEL, np.float32))
    prm = gpu.upload(m.params(t, m.cols, ys, y_off))
    mm.dispatch(gpu, m, gpu.upload(x), yb, prm, t)
    y = np.frombuffer(gpu.read(yb, (t + extra_rows) * ys * 4), np.float32).reshape(t + extra_rows, ys).copy()
    got = y[:t, y_off:y_off + m.rows].copy()
    y[:t, y_off:y_off + m.rows] = SENTINEL
    return got, y


@pytest.mark.usefixtures("always_tiled")
@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(TYPES), tile=st.sampled_from(TILES), rows=st.integers(1, 150), chunks=st.integers(1, 7),
       t=st.integers(1, 80), seed=st.integers(0, 2**16))
def test_tiled_matches_the_reference_and_writes_only_its_output(gpu, monkeypatch, name, tile, rows, chunks, t, seed):
    _check_framed(gpu, monkeypatch, name, tile, rows, chunks, t, seed, split=False)


def _check_framed(gpu, monkeypatch, name, tile, rows, chunks, t, seed, *, split: bool) -> None:
    """A random product within the reference bound, nothing written outside it (split: K in parts)."""
    monkeypatch.setattr(tiled, "TILE", tile)
    cols = chunks * (128 if name == "Q1_0" else 32)
    raw, m = _upload(gpu, name, rows, cols, seed)
    assert not split or tiled.split_for(m, t, mm.OUT_PLAIN, tile) > 1
    x = np.random.default_rng(seed + 1).standard_normal((t, cols)).astype(np.float32)
    got, rest = _run_framed(gpu, m, x)
    assert _within_bound(raw, name, x, got)
    assert np.all(rest == SENTINEL)


@pytest.fixture
def split_always(monkeypatch):
    """K split into up to four parts of at least one chunk on every product (the default splits only grids of
    fewer than SPLIT_GROUPS workgroups, in parts of four chunks or more)."""
    monkeypatch.setattr(tiled, "SPLIT_GROUPS", 1 << 30)
    monkeypatch.setattr(tiled, "MIN_PART_CHUNKS", 1)


@pytest.mark.usefixtures("always_tiled", "split_always")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(TYPES), tile=st.sampled_from(TILES), rows=st.integers(1, 150), chunks=st.integers(2, 9),
       t=st.integers(1, 80), seed=st.integers(0, 2**16))
def test_split_k_matches_the_reference_and_writes_only_its_output(gpu, monkeypatch, name, tile, rows, chunks, t, seed):
    _check_framed(gpu, monkeypatch, name, tile, rows, chunks, t, seed, split=True)


def test_split_k_parts_of_wo_and_down_at_a_prompt_step():
    """The default model's shapes at 512 tokens: wo (576 x 576) and down (576 x 1536) in 72 tiles split four ways,
    QKV and gate/up (split and SwiGLU stores) never; three chunks or a grid of SPLIT_GROUPS tiles not at all."""
    class M:
        def __init__(self, rows, cols):
            self.rows, self.cols = rows, cols

    wo, down, narrow = M(576, 576), M(576, 1536), tiled.Tile(64, 64, 4)
    assert tiled.split_for(wo, 512, mm.OUT_PLAIN, narrow) == 4 and tiled.split_for(down, 512, mm.OUT_PLAIN, narrow) == 4
    assert tiled.split_for(M(960, 576), 512, mm.OUT_SPLIT, tiled.Tile(64, 64, 8)) == 1
    assert tiled.split_for(M(3072, 576), 512, mm.OUT_SWIGLU, tiled.Tile(64, 64, 8)) == 1
    assert tiled.split_for(M(576, 96), 512, mm.OUT_PLAIN, narrow) == 1  # three chunks: no part of four
    assert tiled.split_for(M(2048, 1536), 512, mm.OUT_PLAIN, narrow) == 1  # 256 tiles already


@pytest.mark.usefixtures("always_tiled", "split_always")
def test_split_k_accumulates_into_y_once(gpu):
    raw, m = _upload(gpu, "Q4_1", 70, 160, seed=9)
    x = np.random.default_rng(4).standard_normal((37, 160)).astype(np.float32)
    plain = host.matmul_run(gpu, m, x)
    base = np.random.default_rng(2).standard_normal((37, m.rows)).astype(np.float32)
    assert np.allclose(host.matmul_run(gpu, m, x, accum_into=base), plain + base, rtol=0, atol=1e-5)
    assert _within_bound(raw, "Q4_1", x, plain)


@pytest.mark.parametrize("name", TYPES)
def test_tiled_dequant_is_bit_exact(gpu, name):
    """x = identity (as many tokens as cols, so the batch takes the tiled kernel by itself): y = W^T exactly."""
    rows, cols = 70, 256 if name == "Q1_0" else 96
    assert cols >= tiled.MIN_TOKENS
    raw, m = _upload(gpu, name, rows, cols, seed=2)
    got = host.matmul_run(gpu, m, np.eye(cols, dtype=np.float32))
    want = host.dequantize(raw, QTYPES[name], cols).T
    assert np.array_equal((got + np.float32(0)).view(np.uint32), (want + np.float32(0)).view(np.uint32))


def test_batches_take_the_tiled_kernel_and_single_tokens_the_matvec(gpu, monkeypatch):
    taken = []
    real = tiled.dispatch
    monkeypatch.setattr(tiled, "dispatch", lambda *a, **k: taken.append(a[3]) or real(*a, **k))
    m = _upload(gpu, "Q4_1", 8, 64, seed=3)[1]
    least = tiled.MIN_TOKENS
    assert least is not None and least > 1
    for t in (1, least - 1, least):
        host.matmul_run(gpu, m, np.ones((t, 64), np.float32))
    assert taken == [least]
    monkeypatch.setattr(tiled, "MIN_TOKENS", None)  # the bench's old path: the matvec for every batch
    host.matmul_run(gpu, m, np.ones((least + 8, 64), np.float32))
    assert taken == [least]


@pytest.mark.usefixtures("always_tiled")
def test_tiled_out_modes_match_the_matvec(gpu, monkeypatch):
    """SwiGLU pairs, the split store (bit for bit the plain product) and accumulation, on ragged shapes."""
    monkeypatch.setattr(tiled, "TILE", tiled.Tile(32, 32, 4))
    f, k, t = 37, 96, 21
    raw = quantized("Q4_1", 2 * f, k, seed=8)
    m = mm.upload_matrix(gpu, mm.interleave_rows(raw.tobytes(), f), QTYPES["Q4_1"], 2 * f, k, texture=False)
    x = np.random.default_rng(3).standard_normal((t, k)).astype(np.float32)
    xb, y = gpu.upload(x), gpu.buffer(t * f * 4)
    mm.dispatch(gpu, m, xb, y, gpu.upload(m.params(t, k, f)), t, out=mm.OUT_SWIGLU)
    got = np.frombuffer(gpu.read(y, t * f * 4), np.float32).reshape(t, f)
    want = host.swiglu_reference(host.matmul_reference(raw, QTYPES["Q4_1"], 2 * f, k, x))
    assert np.all(np.abs(got - want) <= 1e-4 * np.abs(want).max())

    n1, n2, n3 = 40, 9, 11
    m = _upload(gpu, "Q8_0", n1 + n2 + n3, k, seed=6)[1]
    plain = host.matmul_run(gpu, m, x)
    ys = [gpu.buffer(t * n * 4) for n in (n1, n2, n3)]
    mm.dispatch(gpu, m, xb, ys[0], gpu.upload(m.params(t, k, 0, n1=n1, n2=n2)), t, out=mm.OUT_SPLIT, y2=ys[1], y3=ys[2])
    parts = [np.frombuffer(gpu.read(b, t * n * 4), np.float32).reshape(t, n) for b, n in zip(ys, (n1, n2, n3), strict=True)]
    assert np.array_equal(np.concatenate(parts, axis=1).view(np.uint32), plain.view(np.uint32))

    base = np.random.default_rng(2).standard_normal((t, m.rows)).astype(np.float32)
    assert np.allclose(host.matmul_run(gpu, m, x, accum_into=base), plain + base, rtol=0, atol=1e-5)


def test_tile_shapes_are_checked():
    with pytest.raises(ValueError, match="workgroup memory"):
        tiled.Tile.parse("128x64x4")
    with pytest.raises(ValueError, match="multiple of 4"):
        tiled.Tile.parse("64x64x6")
    with pytest.raises(ValueError, match="weight items"):
        tiled.Tile.parse("32x16x8")  # 8 weight items per invocation: more than the kernel stages
    with pytest.raises(ValueError, match="BMxBNxTM"):
        tiled.Tile.parse("64x64")
    assert tiled.Tile.parse("64X32x4") == tiled.Tile(64, 32, 4)


def _q41_exact(gpu):
    raw, m = _upload(gpu, "Q4_1", 70, 96, seed=4)
    got = host.matmul_run(gpu, m, np.eye(96, dtype=np.float32))
    return np.array_equal(got, host.dequantize(raw, QTYPES["Q4_1"], 96).T)


def _framed_ok(gpu):
    name, rows, cols, t = "Q8_0", 70, 96, 37  # ragged in rows (70 = 64 + 6) and tokens (37 < 64)
    raw, m = _upload(gpu, name, rows, cols, seed=5)
    x = np.random.default_rng(7).standard_normal((t, cols)).astype(np.float32)
    got, rest = _run_framed(gpu, m, x)
    return _within_bound(raw, name, x, got) and bool(np.all(rest == SENTINEL))


def _framed_ok_tm8(gpu):
    """`_framed_ok` with 8 rows per invocation (the kernel's a4..a7)."""
    saved = tiled.TILE
    tiled.TILE = tiled.Tile(64, 64, 8)
    try:
        return _framed_ok(gpu)
    finally:
        tiled.TILE = saved


def _split_ok(gpu):
    """`_framed_ok` with K split in four parts (ragged: 9 chunks), then accumulated into y."""
    saved = (tiled.SPLIT_GROUPS, tiled.MIN_PART_CHUNKS)
    tiled.SPLIT_GROUPS, tiled.MIN_PART_CHUNKS = 1 << 30, 1
    try:
        raw, m = _upload(gpu, "Q8_0", 70, 288, seed=11)
        x = np.random.default_rng(8).standard_normal((37, 288)).astype(np.float32)
        assert tiled.split_for(m, 37, mm.OUT_PLAIN, tiled.tile_for(m)) == 4
        got, rest = _run_framed(gpu, m, x)
        base = np.random.default_rng(2).standard_normal((37, 70)).astype(np.float32)
        acc = host.matmul_run(gpu, m, x, accum_into=base)
        return (_within_bound(raw, "Q8_0", x, got) and bool(np.all(rest == SENTINEL))
                and bool(np.allclose(acc, got + base, rtol=0, atol=1e-5)))
    finally:
        tiled.SPLIT_GROUPS, tiled.MIN_PART_CHUNKS = saved


TILED_MUTANTS = [  # (what, old, new, check): each must make its check fail
    ("no barrier between loading the tiles and using them", "workgroupBarrier();\n        if (c + 1u < c1)", "if (c + 1u < c1)",
     _framed_ok),
    ("no barrier before the next chunk overwrites the tiles", "workgroupBarrier();  // every invocation is done", "//",
     _framed_ok),
    ("stores for tokens past t", "if (t >= nt) { continue; }", "", _framed_ok),
    ("the second activation item put in the first one's place", "put_x(li + WG, normed(li + WG, c, it.x1));",
     "put_x(li, normed(li + WG, c, it.x1));",
     _framed_ok),
    ("the next chunk fetched from this chunk", "items = fetch(li, c + 1u,", "items = fetch(li, c,", _framed_ok),
    ("the first chunk's weights fetched for every chunk", "it.w0 = load_w(li, c,", "it.w0 = load_w(li, 0u,", _framed_ok),
    ("a second weight item never staged (two per invocation)", "if (NW == 2u) { put_w(li + WG, it.w1); }", "",
     _framed_ok_tm8),
    ("the third and fourth activation items never staged", "if (NX == 4u) {\n        put_x(li + 2u * WG,",
     "if (false) {\n        put_x(li + 2u * WG,", _framed_ok_tm8),
    ("row guard off by one tile row", "if (rb + i < n) { store(", "if (rb + i < n + 4u) { store(", _framed_ok),
    ("Q4_1 quarters 1 and 3 read high nibbles", "let s = select(0u, 4u, e >= 2u);", "let s = select(0u, 4u, e >= 1u);",
     _q41_exact),
    ("the second k of a round multiplies the first k's weights", "let wv2 = ws[(kk + 1u) * (BM / 4u) + tr];",
     "let wv2 = ws[kk * (BM / 4u) + tr];", _framed_ok),
    ("rows 4..7 of an invocation take rows 0..3's weights", "let wh = ws[kk * (BM / 4u) + tr + RT];",
     "let wh = ws[kk * (BM / 4u) + tr];", _framed_ok_tm8),
    ("a written-out round done twice, the next one skipped", "acc = round2(acc, 16u, tr, tc);",
     "acc = round2(acc, 14u, tr, tc);", _framed_ok),
    ("a round's products dropped", "    return a;\n}", "    return acc;\n}", _framed_ok),
    ("activations of the wrong chunk", "x[(t0 + tok) * xs_ + xo + c * 8u + i % 8u]", "x[(t0 + tok) * xs_ + xo + i % 8u]",
     _framed_ok),
    ("every part of K written over part 0", "y2[(z * p[2] + t) * p[0] + r] = v;", "y2[t * p[0] + r] = v;", _split_ok),
    ("every part sums K to its end", "let c1 = (wid.z + 1u) * nc / SPLIT;", "let c1 = nc;", _split_ok),
    ("every part starts at chunk 0", "let c0 = wid.z * nc / SPLIT;", "let c0 = 0u;", _split_ok),
]
SPLIT_SUM_MUTANTS = [
    ("the last part left out of the sum", "for (var z = 1u; z < SPLIT; z++)", "for (var z = 1u; z + 1u < SPLIT; z++)"),
    ("the sum written over y where it accumulates", "if (ACCUM) { y[yi] = y[yi] + s; }", "if (ACCUM) { y[yi] = s; }"),
    ("the second part read from the first", "s = s + part[z * n * p[2] + i];", "s = s + part[i];"),
]


@pytest.mark.parametrize("what,old,new,check", TILED_MUTANTS, ids=[m[0] for m in TILED_MUTANTS])
def test_tiled_mutant_is_caught(gpu, monkeypatch, what, old, new, check):
    assert check(gpu), "the unmutated kernel must pass the check"
    patch_shader(monkeypatch, gpu, "matmul_tiled.wgsl", old, new)
    assert not check(gpu), f"mutation not caught: {what}"


@pytest.mark.usefixtures("always_tiled")
@pytest.mark.parametrize("what,old,new", SPLIT_SUM_MUTANTS, ids=[m[0] for m in SPLIT_SUM_MUTANTS])
def test_split_sum_mutant_is_caught(gpu, monkeypatch, what, old, new):
    assert _split_ok(gpu), "the unmutated kernel must pass the check"
    patch_shader(monkeypatch, gpu, "split_sum.wgsl", old, new)
    assert not _split_ok(gpu), f"mutation not caught: {what}"


@pytest.mark.usefixtures("always_tiled")
def test_each_matrix_takes_its_tile_and_both_match_the_reference(gpu, monkeypatch):
    """Without a TILE set, a matrix with more rows than columns (QKV, gate/up) runs eight rows per invocation,
    the rest (wo, down) four; both products stay within the reference's bound."""
    monkeypatch.setattr(tiled, "TILE", None)
    compiled = []
    real = gpu.kernel
    monkeypatch.setattr(gpu, "kernel", lambda *a, **k: compiled.append(k.get("TM")) or real(*a, **k))
    for rows, cols, tm in ((96, 64, 8), (64, 96, 4)):
        raw, m = _upload(gpu, "Q4_1", rows, cols, seed=rows)
        assert tiled.tile_for(m) == (tiled.WIDE if tm == 8 else tiled.NARROW)
        x = np.random.default_rng(rows).standard_normal((40, cols)).astype(np.float32)
        got, rest = _run_framed(gpu, m, x)
        assert _within_bound(raw, "Q4_1", x, got) and np.all(rest == SENTINEL)
        assert compiled[-1] == tm
    monkeypatch.setattr(tiled, "TILE", tiled.Tile(32, 32, 4))  # a tile set for every matrix wins
    assert tiled.tile_for(m) == tiled.Tile(32, 32, 4)
