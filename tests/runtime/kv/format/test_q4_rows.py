"""4-bit rows: the WGSL store kernel and the numpy reference agree bit for bit, edges included."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.kv.errors import NonFiniteKVError
from bonsai.kv.format import codec
from bonsai.kv.format.rotate import hadamard
from bonsai.kv.store.store import Store


def gpu_store(gpu, k, v, mode):
    """Run the store kernel on rows k, v [n, n_kv, hd]; return (u32 rows [2, n, n_kv, rw], flags)."""
    n, n_kv, hd = k.shape
    store = Store(gpu, n_kv, hd, mode)
    rw = store.row_words
    dst = gpu.buffer(2 * n * n_kv * rw * 4 + 4 * 8)
    flags = gpu.buffer(2 * n * n_kv * 4 + 4 * 3)
    store.record(gpu.upload(k), gpu.upload(v), n, dst, 8, flags, 3)
    rows = np.frombuffer(gpu.read(dst), np.uint32)[8 : 8 + 2 * n * n_kv * rw].reshape(2, n, n_kv, rw)
    fl = np.frombuffer(gpu.read(flags), np.uint32)[3 : 3 + 2 * n * n_kv].reshape(2, n, n_kv)
    return rows, fl


def edge_rows(hd: int) -> np.ndarray:
    """Rows that hit every rounding edge of the format."""
    rows = []
    rows.append(np.zeros(hd, np.float32))  # all zero: scale 0, no division
    z = np.zeros(hd, np.float32)
    z[::2] = -0.0
    rows.append(z)  # negative zeros
    s = np.float32(0.25)  # exact ties: x / s = k + 0.5
    t = np.resize(np.array([7, 0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5, 6.5, -6.5, -7], np.float32) * s, hd)
    rows.append(t)
    # scale ties: amax / 7 exactly half-way between two f16 values (both parities)
    for h in (0x3C00, 0x3C01, 0x0001, 0x0002, 0x7BFE):
        lo = np.array([h], np.uint16).view(np.float16).astype(np.float64)[0]
        hi = np.array([h + 1], np.uint16).view(np.float16).astype(np.float64)[0]
        r = np.linspace(-1, 1, hd).astype(np.float32) * np.float32(7 * (lo + hi) / 2)
        r[0] = np.float32(7 * (lo + hi) / 2)
        assert float(r[0]) == 7 * (lo + hi) / 2
        rows.append(r)
    big = np.linspace(-1, 1, hd).astype(np.float32) * np.float32(458639.0)  # largest magnitude accepted
    big[1] = np.float32(458639.0)
    rows.append(big)
    for amax in (1e-6, 3e-8, 2.9e-8, 1e-30, 1e-40):  # scales that are f16-subnormal or underflow to 0
        rows.append(np.random.default_rng(1).uniform(-1, 1, hd).astype(np.float32) * np.float32(amax))
    one_hot = np.zeros(hd, np.float32)
    one_hot[3] = -5.0
    rows.append(one_hot)
    return np.stack(rows)


@pytest.mark.parametrize("hd", [64, 128])
def test_store_kernel_matches_reference_bit_for_bit(gpu, hd):
    rng = np.random.default_rng(hd)
    edges = edge_rows(hd)
    rand = (rng.standard_normal((40, hd)) * rng.uniform(1e-3, 50, (40, 1))).astype(np.float32)
    x = np.concatenate([edges, rand, rand * np.float32(1e-5)])
    n_kv = 2
    x = x[: len(x) // n_kv * n_kv].reshape(-1, n_kv, hd)
    for mode in ("q4", "f32", "q4r"):
        if mode == "q4r":  # the rotation can grow a row's max by sqrt(hd): keep under the f16 limit
            x = np.where(np.abs(x) > 1e4, np.float32(1e4), x)
        rows, flags = gpu_store(gpu, x, x[::-1].copy(), mode)
        kx = hadamard(x) if mode == "q4r" else x
        want_k = codec.encode(kx, "f32" if mode == "f32" else "q4")
        want_v = codec.encode(x[::-1].copy(), "f32" if mode == "f32" else "q4")
        assert not flags.any()
        assert np.array_equal(rows[0], want_k), mode
        assert np.array_equal(rows[1], want_v), mode


def test_reference_properties_on_edges():
    x = edge_rows(64)
    raw, scale = codec.quantise_rows(x, codec.FORMATS["q4"])
    scale = scale[..., 0]
    assert scale[0] == 0 and (raw[0] == 8).all() and (raw[1] == 8).all()
    # ties at .5 go to even: 0.5->0, 1.5->2, 2.5->2, 3.5->4, 6.5->6, -0.5->-0 ...
    assert raw[2][:12].astype(int).tolist() == [15, 8, 10, 10, 12, 8, 6, 6, 4, 14, 2, 1]
    # largest element maps to the top code, dequantisation is exact f32
    assert raw[-1][3] == 1 and scale[-1] == np.float16(5.0 / 7.0)
    rows = codec.pack_rows(raw, scale[..., None], "q4")
    assert codec.decode(rows, "q4")[-1][3] == np.float32(-7.0) * np.float32(scale[-1])
    assert np.array_equal(codec.unpack_rows(rows, "q4")[0], raw)
    assert rows.shape[-1] * 4 == 64 // 2 + 4


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 458640.0])
def test_unrepresentable_rows_are_rejected(gpu, bad):
    x = np.ones((2, 1, 64), np.float32)
    x[1, 0, 5] = bad
    with pytest.raises(NonFiniteKVError, match=r"index|row"):
        codec.encode(x, "q4")
    _, flags = gpu_store(gpu, x, x, "q4")
    assert (flags[:, 1, 0] != 0).all() and (flags[:, 0, 0] == 0).all()


def test_edges_tell_rounding_rules_apart(gpu):
    # mutation check of the oracle: with half-away-from-zero rounding of x/s, or the scale
    # rounded half-up instead of to even, the packed rows no longer match the kernel's
    x = edge_rows(64)[:, None, :]
    rows, _ = gpu_store(gpu, x, x, "q4")
    raw, scale = codec.quantise_rows(x, codec.FORMATS["q4"])
    s = scale.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        away = np.where(s > 0, np.trunc(x / np.where(s > 0, s, 1) + np.copysign(0.5, x)), 0)
    raw_away = np.clip(away + 8, 0, 15).astype(np.uint8)
    assert not np.array_equal(codec.pack_rows(raw_away, scale, "q4"), rows[0])
    amax = np.abs(x).max(-1).astype(np.float64) / 7
    with np.errstate(over="ignore"):  # the largest-magnitude row's biased scale overflows: fine
        ulp = np.spacing(amax.astype(np.float16)).astype(np.float64)
        up = (amax + np.minimum(ulp, 8.0) / 4).astype(np.float16)
    assert not np.array_equal(codec.pack_rows(raw, up[..., None], "q4"), rows[0])
    assert np.array_equal(codec.pack_rows(raw, scale, "q4"), rows[0])
