"""Quantised matmul and embedding: exact dequantisation (vs gguf.quants.dequantize), bounded dot products."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType, quants

from bonsai.ops import matmul as mm
from bonsai.ops.qtypes import QTYPES, UnsupportedTensorType, qtype
from tests.helpers import ops as host
from tests.helpers.ops import dequantize

from .conftest import quantized

pytestmark = pytest.mark.usefixtures("both_layouts")  # every test, with each matmul kernel

TYPES = ["F32", "F16", "Q4_0", "Q4_1", "Q8_0", "Q1_0"]


def _plus_zero(a):
    return (a + np.float32(0)).view(np.uint32)  # -0.0 -> +0.0: x*0 sums cannot keep a sign of zero


def test_q1_0_sign_bit_one_is_plus_scale():
    raw = np.zeros((1, 18), np.uint8)
    raw[0, :2] = np.array([0.5], np.float16).view(np.uint8)
    raw[0, 2] = 0b00000101  # weights 0 and 2 positive, LSB first
    w = dequantize(raw, QTYPES["Q1_0"], 128)[0]
    assert w[:4].tolist() == [0.5, -0.5, 0.5, -0.5] and (w[8:] == -0.5).all()


def test_q1_0_quantises_zero_as_plus_scale():
    """The format (llama.cpp's quantize_row_q1_0_ref) sets bit 1 for x >= 0: zeros dequantise to +d."""
    from bonsai.reference.quants import quantize_q1_0

    w = np.zeros((1, 128), np.float32)
    w[0, :3] = [-1.0, 2.0, -3.0]
    back = dequantize(quantize_q1_0(w), QTYPES["Q1_0"], 128)[0]
    d = np.float32(np.float16(6.0 / 128))
    assert back[:4].tolist() == [-d, d, -d, d] and (back[3:] == d).all()


@pytest.mark.parametrize("name", TYPES)
def test_gpu_dequant_is_bit_exact(gpu, name):
    """x = identity makes y = W^T with no rounding: one product by 1.0, the rest exact zeros."""
    rows, cols = 6, 256 if name == "Q1_0" else 96
    raw = quantized(name, rows, cols, seed=1)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols)
    got = host.matmul_run(gpu, m, np.eye(cols, dtype=np.float32))  # (cols tokens, rows)
    want = dequantize(raw, QTYPES[name], cols).T
    if name in ("F16", "Q4_0", "Q4_1", "Q8_0"):
        assert np.array_equal(_plus_zero(want), _plus_zero(quants.dequantize(raw, GGMLQuantizationType[name]).reshape(rows, cols).T))
    assert np.array_equal(_plus_zero(got), _plus_zero(want))


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("t", [1, 3, 11])
def test_gpu_matmul_matches_float64_reference(gpu, name, t):
    """f32 sums in another order: |err| <= 1e-5 * sum|w*x| (K <= 512 terms, f32 eps 6e-8)."""
    rows, cols = 37, 384
    raw = quantized(name, rows, cols, seed=t)
    x = np.random.default_rng(9).standard_normal((t, cols)).astype(np.float32)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols)
    got = host.matmul_run(gpu, m, x)
    want = host.matmul_reference(raw, QTYPES[name], rows, cols, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(dequantize(raw, QTYPES[name], cols).astype(np.float64)).T
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)


@pytest.mark.parametrize("t", [1, 3])
def test_a_tall_matrix_takes_fewer_lanes_and_matches_the_reference(gpu, monkeypatch, t):
    """A matrix of TALL_ROWS rows (the output head's shape, scaled down) runs with TALL_LANES threads per row
    and every row is within the reference's bound; the same matrix with 16 lanes gives other bits (the
    reduction's order), so the tall path is the one that ran."""
    monkeypatch.setattr(mm, "TALL_ROWS", 640)
    rows, cols = 700, 576
    raw = quantized("Q8_0", rows, cols, seed=40 + t)
    x = np.random.default_rng(11).standard_normal((t, cols)).astype(np.float32)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q8_0"], rows, cols)
    assert m.lanes_at(t) == mm.TALL_LANES and mm.lanes_for(cols, QTYPES["Q8_0"]) == 16
    got = host.matmul_run(gpu, m, x)
    want = host.matmul_reference(raw, QTYPES["Q8_0"], rows, cols, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(dequantize(raw, QTYPES["Q8_0"], cols).astype(np.float64)).T
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)
    if m.tex is None:  # the buffer kernel (the CPU kernel has no lanes)
        monkeypatch.setattr(mm, "TALL_ROWS", 1 << 30)
        wide = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q8_0"], rows, cols)
        assert wide.lanes_at(t) == (mm.DECODE_LANES if t == 1 else 16)
        assert not np.array_equal(host.matmul_run(gpu, wide, x).view(np.uint32), got.view(np.uint32))


@pytest.mark.parametrize("name", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("cols", [576, 1536])
def test_one_token_takes_lanes_for_every_chunk_and_matches_the_reference(gpu, name, cols):
    """A decode step's product (one token) loads a row's chunks in one round on up to 32 lanes
    (`DECODE_LANES`), a batch on 16 lanes; the token's row is within the reference's bound either way. With
    18 chunks (576 columns) lanes 18-31 add zeros, so the bits are the batch's; with 48 (1536) the lanes
    sum their chunks in another order, so the bits differ: the one-token path is the one that ran."""
    rows = 37
    raw = quantized(name, rows, cols, seed=50)
    x = np.random.default_rng(12).standard_normal((3, cols)).astype(np.float32)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols, texture=False)  # the buffer kernel's lanes
    assert (m.lanes_at(1), m.lanes_at(3)) == (mm.DECODE_LANES, 16) == (32, 16)
    one = host.matmul_run(gpu, m, x[:1])
    batch = host.matmul_run(gpu, m, x)
    want = host.matmul_reference(raw, QTYPES[name], rows, cols, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(dequantize(raw, QTYPES[name], cols).astype(np.float64)).T
    assert np.all(np.abs(one - want[:1]) <= 1e-5 * scale[:1] + 1e-30)
    assert np.all(np.abs(batch - want) <= 1e-5 * scale + 1e-30)
    assert np.array_equal(one.view(np.uint32), batch[:1].view(np.uint32)) == (cols == 576)


def test_accumulate_adds_to_existing_output(gpu):
    raw = quantized("Q4_1", 8, 64, seed=2)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q4_1"], 8, 64)
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    base = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    got = host.matmul_run(gpu, m, x, accum_into=base)
    assert np.allclose(got, host.matmul_run(gpu, m, x) + base, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", ["Q8_0", "Q4_1", "F32", "Q4_0"])
def test_embedding_rows_are_exact_dequantised_rows(gpu, name):
    rows, cols = 50, 128
    raw = quantized(name, rows, cols, seed=4)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols)
    ids = [7, 0, 49, 7, 3]
    got = host.embed_run(gpu, m, ids)
    assert np.array_equal(got.view(np.uint32), dequantize(raw, QTYPES[name], cols)[ids].view(np.uint32))


def test_mutation_wrong_nibble_order_is_caught(gpu):
    """Mutation: a kernel that reads Q4_1 nibbles high-first must fail the exactness check."""
    raw = quantized("Q4_1", 4, 64, seed=5)
    swapped = raw.copy().reshape(4, 2, 20)
    qs = swapped[..., 4:]
    swapped[..., 4:] = (qs >> 4) | ((qs & 0xF) << 4)  # equivalent to the kernel swapping nibbles
    m = mm.upload_matrix(gpu, swapped.tobytes(), QTYPES["Q4_1"], 4, 64)
    got = host.matmul_run(gpu, m, np.eye(64, dtype=np.float32))
    assert not np.array_equal(_plus_zero(got), _plus_zero(dequantize(raw, QTYPES["Q4_1"], 64).T))


def test_unsupported_type_names_tensor_and_type():
    with pytest.raises(UnsupportedTensorType, match=r"tensor 'blk.0.attn_q.weight': GGML type Q6_K"):
        qtype("Q6_K", tensor="blk.0.attn_q.weight")


def test_fused_swiglu_output_matches_separate_matmuls_then_swiglu(gpu):
    f, k = 40, 128
    raw = quantized("Q4_1", 2 * f, k, seed=8)  # [gate; up]
    m = mm.upload_matrix(gpu, mm.interleave_rows(raw.tobytes(), f), QTYPES["Q4_1"], 2 * f, k)
    x = np.random.default_rng(3).standard_normal((3, k)).astype(np.float32)
    xb, y = gpu.upload(x), gpu.buffer(3 * f * 4)
    mm.dispatch(gpu, m, xb, y, gpu.upload(m.params(3, k, f)), 3, out=mm.OUT_SWIGLU)
    got = np.frombuffer(gpu.read(y, 3 * f * 4), np.float32).reshape(3, f)
    want = host.swiglu_reference(host.matmul_reference(raw, QTYPES["Q4_1"], 2 * f, k, x))
    assert np.all(np.abs(got - want) <= 1e-4 * np.abs(want).max())
    # mutation: without the interleave, pairs are (gate_2i, gate_2i+1): detected
    bad = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q4_1"], 2 * f, k)
    mm.dispatch(gpu, bad, xb, y, gpu.upload(m.params(3, k, f)), 3, out=mm.OUT_SWIGLU)
    assert not np.allclose(np.frombuffer(gpu.read(y, 3 * f * 4), np.float32).reshape(3, f), want, atol=1e-2)


@pytest.mark.parametrize("t", [1, 5])
def test_split_output_is_bit_identical_to_one_plain_matmul(gpu, t):
    n1, n2, n3, k = 24, 8, 8, 64
    raw = quantized("Q8_0", n1 + n2 + n3, k, seed=6)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q8_0"], n1 + n2 + n3, k)
    x = np.random.default_rng(4).standard_normal((t, k)).astype(np.float32)
    plain = host.matmul_run(gpu, m, x)
    ys = [gpu.buffer(t * n * 4) for n in (n1, n2, n3)]
    prm = gpu.upload(m.params(t, k, 0, n1=n1, n2=n2))
    mm.dispatch(gpu, m, gpu.upload(x), ys[0], prm, t, out=mm.OUT_SPLIT, y2=ys[1], y3=ys[2])
    parts = [np.frombuffer(gpu.read(b, t * n * 4), np.float32).reshape(t, n) for b, n in zip(ys, (n1, n2, n3), strict=True)]
    assert np.array_equal(np.concatenate(parts, axis=1).view(np.uint32), plain.view(np.uint32))


@pytest.mark.parametrize("name", TYPES)
def test_one_token_is_bit_identical_to_the_same_token_in_a_batch(gpu, monkeypatch, both_layouts, name):
    """Decode (one token: matmul_cpu.wgsl's `main1` on a CPU adapter) and a batch (`main`) sum in one order:
    each token's row of a 3-token product equals the same token alone, bit for bit, for every output. Q1_0's
    one-token product on the buffer kernel (SPREAD, test_matmul_q1.py) sums d * (+-x) per chunk, not the batch's
    (+-d) * x: that pairing holds for the lanes-per-row kernel it replaces, checked here."""
    if both_layouts == "buffer" and name == "Q1_0":
        monkeypatch.setattr(mm, "Q1_SPREAD", False)
    rows, cols, t = 37, 256, 3
    raw = quantized(name, rows, cols, seed=21)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols)
    x = np.random.default_rng(7).standard_normal((t, cols)).astype(np.float32)
    acc = np.random.default_rng(8).standard_normal((t, rows)).astype(np.float32)
    batch = host.matmul_run(gpu, m, x, accum_into=acc)
    for i in range(t):
        alone = host.matmul_run(gpu, m, x[i:i + 1], accum_into=acc[i:i + 1])
        assert np.array_equal(alone.view(np.uint32), batch[i:i + 1].view(np.uint32)), f"token {i}"
    f = 20  # SwiGLU pairs: 2f rows
    sw = mm.upload_matrix(gpu, mm.interleave_rows(quantized(name, 2 * f, cols, seed=22).tobytes(), f), QTYPES[name],
                          2 * f, cols)

    def swiglu(xs):
        y = gpu.buffer(len(xs) * f * 4)
        mm.dispatch(gpu, sw, gpu.upload(xs), y, gpu.upload(sw.params(len(xs), cols, f)), len(xs), out=mm.OUT_SWIGLU)
        return np.frombuffer(gpu.read(y, len(xs) * f * 4), np.float32).reshape(len(xs), f)

    both = swiglu(x)
    for i in range(t):
        assert np.array_equal(swiglu(x[i:i + 1]).view(np.uint32), both[i:i + 1].view(np.uint32)), f"swiglu token {i}"


@pytest.mark.parametrize("name", ["Q4_1", "Q1_0"])
def test_cpu_tiles_give_the_same_bits(gpu, monkeypatch, name):
    """The CPU kernel's entries (main1, main4: 8-row tiles; main: any tile) sum each product in one order."""
    rows, cols, t = 37, 256, 6
    raw = quantized(name, rows, cols, seed=23)
    x = np.random.default_rng(9).standard_normal((t, cols)).astype(np.float32)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols)
    tiles = host.matmul_run(gpu, m, x)
    monkeypatch.setattr(mm, "CPU_ROWS", 4)
    generic = host.matmul_run(gpu, m, x)
    assert np.array_equal(tiles.view(np.uint32), generic.view(np.uint32))


def test_decode_covers_every_row_of_a_matrix_of_many_workgroups(gpu, monkeypatch):
    """main1's 16-invocation workgroups (CPU_DECODE_WG) over 600 rows (75 invocations, 5 groups): every row
    equals the batch kernel's; a dispatch sized for 32-wide groups leaves rows unwritten and is caught."""
    rows, cols = 600, 64
    raw = quantized("Q4_1", rows, cols, seed=31)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q4_1"], rows, cols, texture=True)
    x = np.random.default_rng(10).standard_normal((2, cols)).astype(np.float32)
    batch = host.matmul_run(gpu, m, x)
    assert np.array_equal(host.matmul_run(gpu, m, x[:1]).view(np.uint32), batch[:1].view(np.uint32))
    monkeypatch.setattr(mm, "CPU_DECODE_WG", 32)
    assert not np.array_equal(host.matmul_run(gpu, m, x[:1]).view(np.uint32), batch[:1].view(np.uint32))
