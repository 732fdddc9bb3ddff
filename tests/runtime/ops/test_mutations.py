"""Mutation tests: kernels built from a deliberately broken copy of their WGSL must fail our checks.

Each case patches one line of the real shader source, compiles it, swaps it in, and asserts the
same comparison the op tests make (exact bits for dequantisation, the stated bound otherwise) fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.gpu import shaders
from bonsai.gpu.device import Kernel
from bonsai.ops import matmul as mm
from bonsai.ops import rope as rp
from bonsai.ops import tiled
from bonsai.ops.qtypes import QTYPES
from tests.helpers import ops as host
from tests.helpers.ops import dequantize

from .conftest import quantized


def _compile(gpu, filename, old, new, entry="main", **constants):
    src = shaders.load_source("bonsai.ops", filename)
    assert src.count(old) >= 1, f"mutation site {old!r} not found in {filename}"
    code = shaders.render(src.replace(old, new), constants, name=filename)
    module = gpu.device.create_shader_module(code=code)
    pipe = gpu.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": entry})
    return Kernel(f"mutant:{filename}", pipe)


def _dequant_exact(gpu, name, cols=128, texture=False):
    raw = quantized(name, 4, cols, seed=11)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], 4, cols, texture=texture)
    got = host.matmul_run(gpu, m, np.eye(cols, dtype=np.float32))
    want = dequantize(raw, QTYPES[name], cols).T
    return np.array_equal((got + np.float32(0)).view(np.uint32), (want + np.float32(0)).view(np.uint32))


def _matmul_within_bound(gpu, name, texture=False):
    rows, cols, t = 9, 256, 3
    raw = quantized(name, rows, cols, seed=12)
    x = np.random.default_rng(2).standard_normal((t, cols)).astype(np.float32)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols, texture=texture)
    got = host.matmul_run(gpu, m, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(dequantize(raw, QTYPES[name], cols).astype(np.float64)).T
    return bool(np.all(np.abs(got - host.matmul_reference(raw, QTYPES[name], rows, cols, x)) <= 1e-5 * scale))


MATMUL_MUTANTS = [  # (what, qtype, old, new, check)
    ("Q4_1 nibbles high-first", "Q4_1", "o[1] = nib_lo(q1) * dm.x + dm.y;", "o[1] = nib_lo(q1 >> 4u) * dm.x + dm.y;",
     _dequant_exact),
    ("Q1_0 sign bit inverted", "Q1_0", "select(vec4<f32>(-d), vec4<f32>(d),", "select(vec4<f32>(d), vec4<f32>(-d),",
     _dequant_exact),
    ("unaligned word assembled with the wrong shift", "Q8_0", "(w[i] >> 16u) | (w[i + 1u] << 16u)",
     "(w[i] >> 8u) | (w[i + 1u] << 24u)", _dequant_exact),
    ("Q4_0 offset 8 forgotten", "Q4_0", "o[v] = (nib_lo(q) - 8.0) * d;", "o[v] = nib_lo(q) * d;", _dequant_exact),
    ("Q8_0 a word of the chunk loaded twice", "Q8_0", "let q5 = word_at(b + 22u);", "let q5 = word_at(b + 18u);",
     _dequant_exact),
    ("workgroup reduction drops the last lanes", "Q4_1", "if (lane < stride) {", "if (lane < stride && stride > 1u) {",
     _matmul_within_bound),
]


@pytest.mark.parametrize("what,name,old,new,check", MATMUL_MUTANTS, ids=[m[0] for m in MATMUL_MUTANTS])
def test_matmul_mutant_is_caught(gpu, monkeypatch, what, name, old, new, check):
    monkeypatch.setattr(tiled, "MIN_TOKENS", None)  # these mutate the matvec (matmul.wgsl): no batch goes tiled
    assert check(gpu, name), "the unmutated kernel must pass the check"
    real = mm.kernel

    def mutant(gpu_, m, tt, accum=False, entry="main", out=mm.OUT_PLAIN, norm=False, rope_hd=0):
        return _compile(gpu_, "matmul.wgsl", old, new, entry=entry, **mm.constants(m, tt, accum, out, norm, rope_hd))

    monkeypatch.setattr(mm, "kernel", mutant)
    assert not check(gpu, name), f"mutation not caught: {what}"
    monkeypatch.setattr(mm, "kernel", real)


CPU_MATMUL_MUTANTS = [  # the CPU kernel (matmul_cpu.wgsl, planar weights in a texture): (what, qtype, old, new, check)
    ("Q4_1 low and high nibbles swapped", "Q4_1", "W8(nib_lo(q.x) * dm.x + m,", "W8(nib_lo(q.x >> 4u) * dm.x + m,",
     _dequant_exact),
    ("Q4_0 offset 8 forgotten", "Q4_0", "let m = select(-8.0 * dm.x, dm.y, QTYPE == 3u);",
     "let m = select(0.0, dm.y, QTYPE == 3u);", _dequant_exact),
    ("Q8_0 second texel read twice", "Q8_0", "let q1 = texel(wt, b * 2u + 1u);", "let q1 = texel(wt, b * 2u);",
     _dequant_exact),
    ("Q1_0 chunk takes the wrong word of its block", "Q1_0", "let q = texel(wt, b)[c & 3u];",
     "let q = texel(wt, b)[(c + 1u) & 3u];", _dequant_exact),
    ("main4: x of the tile's first token for every token", "F16",
     "return x8(min(t0 + t, nt - 1u) * xs + xo + c * 8u);", "return x8(t0 * xs + xo + c * 8u);", _matmul_within_bound),
    ("main4: the tile's last row dropped", "Q4_1", "a7 += dot4(chunk8(min(r0 + 7u, rl), c), x0, x1, x2, x3);", "",
     _matmul_within_bound),
    # the generic tile (`main`: other R x TT tiles, bench/probes/cpu_tile_bench.py), run with 4-row tiles
    ("main: x of the tile's first token for every token", "F16", "let xb = min(t0 + t, nt - 1u) * xs + xo + c * 8u;",
     "let xb = t0 * xs + xo + c * 8u;", _matmul_within_bound),
    ("main: the tile's last row dropped", "Q4_1", "for (var i = 0u; i < R; i++) {\n            let wv",
     "for (var i = 0u; i + 1u < R; i++) {\n            let wv", _matmul_within_bound),
]



def _matvec_within_bound(gpu, name, texture=False):
    """One token (the decode entry `main1` on the CPU kernel), 9 rows: the bound of `_matmul_within_bound`."""
    rows, cols = 9, 256
    raw = quantized(name, rows, cols, seed=13)
    x = np.random.default_rng(3).standard_normal((1, cols)).astype(np.float32)
    m = mm.upload_matrix(gpu, raw.tobytes(), QTYPES[name], rows, cols, texture=texture)
    got = host.matmul_run(gpu, m, x)
    scale = np.abs(x).astype(np.float64) @ np.abs(dequantize(raw, QTYPES[name], cols).astype(np.float64)).T
    return bool(np.all(np.abs(got - host.matmul_reference(raw, QTYPES[name], rows, cols, x)) <= 1e-5 * scale))


CPU_MATMUL_MUTANTS += [  # the decode entry, main1
    ("main1: the tile's last row computed from the row before", "Q4_1", "dot8(chunk8(min(r0 + 7u, rl), c), x)",
     "dot8(chunk8(min(r0 + 6u, rl), c), x)", _matvec_within_bound),
    ("main1: x read one texel late", "Q8_0", "let x = x8(xo + c * 8u);", "let x = x8(xo + c * 8u + 1u);",
     _matvec_within_bound),
    ("main1: the last chunk left out", "F16", "for (var c = 0u; c < p[1] / 32u; c++) {\n        let x = x8(",
     "for (var c = 0u; c + 1u < p[1] / 32u; c++) {\n        let x = x8(", _matvec_within_bound),
]


@pytest.mark.parametrize("what,name,old,new,check", CPU_MATMUL_MUTANTS, ids=[m[0] for m in CPU_MATMUL_MUTANTS])
def test_cpu_matmul_mutant_is_caught(gpu, monkeypatch, what, name, old, new, check):
    if what.startswith("main:"):
        monkeypatch.setattr(mm, "CPU_ROWS", 4)  # not the 8-row entries main1 / main4
    assert check(gpu, name, texture=True), "the unmutated kernel must pass the check"

    def mutant(gpu_, m, tt, accum=False, entry="main", out=mm.OUT_PLAIN):
        consts = dict(QTYPE=m.qtype.ggml_id, VT=mm.PLANAR_TEXELS[m.qtype.name], BLK=128 if m.qtype.name == "Q1_0" else 32,
                      R=mm.CPU_ROWS, TT=tt, ACCUM=accum, OUT=out)
        return _compile(gpu_, "matmul_cpu.wgsl", old, new, entry=entry, **consts)

    monkeypatch.setattr(mm, "kernel", mutant)
    assert not check(gpu, name, texture=True), f"mutation not caught: {what}"


def _rope_ok(gpu, pos):
    x = np.random.default_rng(5).standard_normal((3, 2, 64)).astype(np.float32)
    got = host.rope_run(gpu, x, pos, 10000.0, neox=False, n_q=1)
    return np.all(np.abs(got - host.rope_reference(x, pos, 10000.0, neox=False)) <= 2.0 ** -21 * np.abs(x).max())


def _rope_mutant(gpu, monkeypatch, old, new):
    k = _compile(gpu, "rope.wgsl", old, new, WG=rp.WG, NEOX=False, QK_NORM=False, HEAD_DIM=64)
    monkeypatch.setattr(gpu, "kernel", lambda *a, **kw: k)


def test_rope_position_off_by_one_is_caught(gpu, monkeypatch):
    assert _rope_ok(gpu, 9)
    _rope_mutant(gpu, monkeypatch, "let row = 12u + 2u * t * half;", "let row = 12u + 2u * (t + 1u) * half;")
    assert not _rope_ok(gpu, 9)


@pytest.mark.parametrize("pos", [1100, 8000])
def test_rope_angles_computed_in_the_kernel_are_caught_at_long_positions(gpu, monkeypatch, pos):
    """The kernel before issue 16's fix: angle pos * base^(-2i/n) in f32 and the shader's own cos/sin
    (SwiftShader's err by ~2e-4; lavapipe's angle by ~pos * 2^-24 rad). The table's bound catches it."""
    assert _rope_ok(gpu, pos)
    _rope_mutant(gpu, monkeypatch, "let c = bitcast<f32>(p[row + 2u * pair]); let s = bitcast<f32>(p[row + 2u * pair + 1u]);",
                 "let th = f32(p[5] + t) * pow(10000.0, -2.0 * f32(pair) / f32(n_rot)); let c = cos(th); let s = sin(th);")
    assert not _rope_ok(gpu, pos)


