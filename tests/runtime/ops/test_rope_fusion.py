"""RoPE in the QKV matmul's epilogue (matmul.wgsl ROPE) gives the bits of the matmul, then rope.wgsl."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.ops import matmul as mm
from bonsai.ops import rope
from bonsai.ops.qtypes import QTYPES
from tests.helpers.shader_patch import patch_shader

from .conftest import quantized

HD, NQ, NKV, COLS, THETA = 64, 2, 1, 128, 10000.0
N1, N2 = NQ * HD, NKV * HD


def _qkv(gpu, x: np.ndarray, pos: int, fused: bool, name: str = "Q4_1") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, k, v) for the tokens of x at positions pos..: one fused dispatch, or the split matmul then rope.wgsl."""
    t = len(x)
    raw = quantized(name, N1 + 2 * N2, COLS, seed=3)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], N1 + 2 * N2, COLS, texture=False)
    q, k, v = gpu.buffer(t * N1 * 4), gpu.buffer(t * N2 * 4), gpu.buffer(t * N2 * 4)
    prm = gpu.upload(m.params(t, COLS, 0, n1=N1, n2=N2))
    block = gpu.upload(rope.params(NQ + NKV, HD, HD, pos, NQ) + rope.angle_rows(pos, t, HD, THETA))
    mm.dispatch(gpu, m, gpu.upload(x), q, prm, t, out=mm.OUT_SPLIT, y2=k, y3=v, rope=(block, HD) if fused else None)
    if not fused:
        rope.dispatch(gpu, q, k, gpu.buffer(16), block, NQ + NKV, t, neox=False, qk_norm=False, head_dim=HD)
    return tuple(np.frombuffer(gpu.read(b), np.float32).copy() for b in (q, k, v))  # type: ignore[return-value]


@pytest.mark.parametrize(("t", "pos"), [(1, 0), (1, 1099), (5, 37)])
def test_rope_in_the_qkv_epilogue_gives_the_bits_of_the_rope_dispatch(gpu, t, pos):
    x = np.random.default_rng(t + pos).standard_normal((t, COLS)).astype(np.float32)
    fused, separate = _qkv(gpu, x, pos, True), _qkv(gpu, x, pos, False)
    for a, b in zip(fused, separate, strict=True):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("pos", [0, 1099])
def test_rope_in_the_epilogue_of_a_q1_0_decode_product(gpu, pos):
    """Q1_0's one-token product (SPREAD: a workgroup's rows summed across all its invocations) hands the epilogue
    the same pairs: the fused rotation gives the bits of the split product, then rope.wgsl."""
    x = np.random.default_rng(pos).standard_normal((1, COLS)).astype(np.float32)
    fused, separate = _qkv(gpu, x, pos, True, "Q1_0"), _qkv(gpu, x, pos, False, "Q1_0")
    for a, b in zip(fused, separate, strict=True):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize(("old", "new"), [
    ("if (r < n1 + n2) {  // a Q or K row pair", "if (r < n) {  // a Q or K row pair"),
    ("return vec2<f32>(a * c - b * s, a * s + b * c);", "return vec2<f32>(a * c - b * s, b * s + a * c);"),
    ("let row = 12u + 2u * (t * (ROPE_HD / 2u) + pair);", "let row = 12u + 2u * pair;"),
], ids=["V rows rotated too", "second row's terms swapped", "every token takes the first token's angles"])
def test_a_wrong_rotation_in_the_epilogue_is_caught(gpu, monkeypatch, old, new):
    x = np.random.default_rng(9).standard_normal((5, COLS)).astype(np.float32)
    separate = _qkv(gpu, x, 70, False)
    patch_shader(monkeypatch, gpu, "matmul.wgsl", old, new)
    fused = _qkv(gpu, x, 70, True)
    assert not all(np.array_equal(a.view(np.uint32), b.view(np.uint32)) for a, b in zip(fused, separate, strict=True))


def test_a_dispatch_that_cannot_fuse_rope_says_so(gpu):
    raw = quantized("Q4_1", N1 + 2 * N2, COLS, seed=3)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES["Q4_1"], N1 + 2 * N2, COLS, texture=True)  # the CPU kernel
    with pytest.raises(ValueError, match="cannot fuse RoPE"):
        mm.dispatch(gpu, m, gpu.buffer(COLS * 4), gpu.buffer(N1 * 4), gpu.buffer(48), 1, out=mm.OUT_SPLIT,
                    y2=gpu.buffer(N2 * 4), y3=gpu.buffer(N2 * 4), rope=(gpu.buffer(48), HD))
