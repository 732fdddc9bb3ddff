"""The KV store in the QKV matmul's epilogue (ops.qkv_store, matmul_kv.wgsl) writes the staging rows, the
slot or residual rows and the flags of the matmul + store.wgsl path, bit for bit, bad rows included."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.kv.cache import KVCache
from bonsai.kv.errors import NonFiniteKVError
from bonsai.ops import matmul as mm
from bonsai.ops import qkv_store, rope
from bonsai.ops.qtypes import QTYPES
from tests.helpers.shader_patch import patch_shader

HD, NQ, NKV, LAYERS, THETA = 64, 2, 2, 2, 10000.0
N1, N2 = NQ * HD, NKV * HD
# column 0 of x per position: 0 leaves every row finite and small; 1 puts K head 0 row 5 near 1e30 and
# V head 1 row 10 near -1e5 (over q4res' 65520, under twice it); 1e20 makes the K row inf (and its RoPE partner)
X0 = [0.0, 1.0, 1e20, 0.0, 0.0, 1.0]
NAN_AT = 3  # x holds a NaN at this position: every row non-finite


def _matrix(gpu, cols: int) -> mm.QMatrix:
    w = np.random.default_rng(cols).standard_normal((N1 + 2 * N2, cols)).astype(np.float32)
    w[:, 0] = 0.0
    w[N1 + 5, 0] = 1e30
    w[N1 + N2 + HD + 10, 0] = -1e5
    return mm.upload_matrix(gpu, w.tobytes(), QTYPES["F32"], N1 + 2 * N2, cols, texture=False)


def _x(cols: int, pos: int) -> np.ndarray:
    x = np.random.default_rng(100 + pos).standard_normal(cols).astype(np.float32)
    x[0] = X0[pos]
    if pos == NAN_AT:
        x[2] = np.nan
    return x


def _run(gpu, mode: str, cols: int, fused: bool):
    """(q of every step, staging words, flag words, slot and residual words, the sync's error or None)."""
    m = _matrix(gpu, cols)
    cache = KVCache(gpu, LAYERS, NKV, HD, 64, mode=mode, window=64)
    cache.variant = "blocks"
    q, k, v = gpu.buffer(N1 * 4), gpu.buffer(N2 * 4), gpu.buffer(N2 * 4)
    qs = []
    for pos in range(len(X0)):
        x = gpu.upload(_x(cols, pos))
        block = gpu.upload(rope.params(NQ + NKV, HD, HD, pos, NQ) + rope.angle_rows(pos, 1, HD, THETA))
        for layer in range(LAYERS):
            if fused:
                assert qkv_store.fuses(gpu, m, 1, HD, N1)
                rows = cache.epilogue_rows(layer, pos, 1)
                assert rows is not None
                prm = gpu.upload(qkv_store.params(m, cols, N1, N2, 0.0, rows))
                qkv_store.dispatch(gpu, m, x, q, prm, rows, norm=None, rope=(block, HD))
                cache.append(layer, k, v, pos, 1, stored=rows)
            else:
                prm = gpu.upload(m.params(1, cols, 0, n1=N1, n2=N2))
                mm.dispatch(gpu, m, x, q, prm, 1, out=mm.OUT_SPLIT, y2=k, y3=v, rope=(block, HD))
                cache.append(layer, k, v, pos, 1)
            qs.append(np.frombuffer(gpu.read(q), np.uint32).copy())
    stg = cache._staging
    words = [np.frombuffer(gpu.read(b), np.uint32) for b in (stg.buffer, stg.flags)]
    dst = [gpu.read(b) for b in cache._slots.resident.values()]
    dst += [gpu.read(b) for b in (cache.residual.bufs if cache.residual is not None else [])]
    try:
        cache.sync_host()
        error = None
    except NonFiniteKVError as exc:
        error = str(exc)
    return np.array(qs), words[0], words[1], dst, error


@pytest.mark.parametrize("cols", [128, 576])  # 4 and 16 workgroups per head row
@pytest.mark.parametrize("mode", ["f32", "q4res"])
def test_the_epilogue_stores_the_bits_of_the_store_kernel(gpu, mode, cols):
    plain, fused = _run(gpu, mode, cols, False), _run(gpu, mode, cols, True)
    assert np.array_equal(fused[0], plain[0])  # Q rows
    assert np.array_equal(fused[1], plain[1])  # staging rows
    assert np.array_equal(fused[2], plain[2])  # flags, and the scratch words back at zero
    assert fused[3] == plain[3]  # window slots (f32) or residuals (q4res)
    over = 2 if mode == "q4res" else 0  # f32 K/V have no limit
    first = "position 1 K head 0: a magnitude" if over else "position 2 K head 0: a NaN/inf"
    assert fused[4] == plain[4] and fused[4] is not None and first in fused[4]  # the sync's error names it
    flags = fused[2][: LAYERS * len(X0) * 2 * NKV].reshape(len(X0), LAYERS, 2, NKV)
    assert (flags[0] == 0).all() and (flags[4] == 0).all()
    assert (flags[1, :, 0] == [over, 0]).all() and (flags[1, :, 1] == [0, over]).all()
    assert (flags[2, :, 0] == [1, 0]).all() and (flags[2, :, 1] == [0, over]).all()
    assert (flags[NAN_AT] == 1).all()


@pytest.mark.parametrize(("old", "new"), [
    ("        y3[d2[0] + i] = v;", "        y3[d2[1] + i] = v;"),
    ("        y3[d2[0] + i] = v;", "        _ = d2[0];"),
    ("    y2[p[11] + i] = v;", "    y2[p[11] + i + 1u] = v;"),
    ("            atomicStore(&flags[p[12] + h], bad);", "            atomicStore(&flags[p[12] + h], 0u);"),
    ("            if ((all & 0xffu) != 0u) { bad = 1u; }", "            if ((all & 0xffu) != 0u) { bad = 2u; }"),
    ("            atomicStore(&flags[p[13] + h], 0u);", ""),
    ("    if (limit > 0.0 && abs(v) >= limit)", "    if (limit > 0.0 && abs(v) > 2.0 * limit)"),
], ids=["K where V belongs", "no slot copy", "staging one word off", "flag dropped", "non-finite flagged 2",
        "scratch not zeroed", "limit doubled"])
def test_a_wrong_epilogue_store_is_caught(gpu, monkeypatch, old, new):
    plain = _run(gpu, "q4res", 128, False)
    patch_shader(monkeypatch, gpu, "matmul.wgsl", old, new)
    fused = _run(gpu, "q4res", 128, True)
    assert not (np.array_equal(fused[1], plain[1]) and np.array_equal(fused[2], plain[2]) and fused[3] == plain[3]
                and fused[4] == plain[4])


def test_an_adapter_with_8_storage_buffers_keeps_the_store_dispatch(gpu, monkeypatch):
    import dataclasses

    m = _matrix(gpu, 128)
    assert qkv_store.fuses(gpu, m, 1, HD, N1) and not qkv_store.fuses(gpu, m, 2, HD, N1)
    monkeypatch.setattr(gpu, "limits", dataclasses.replace(gpu.limits, max_storage_buffers=8))
    assert not qkv_store.fuses(gpu, m, 1, HD, N1)
