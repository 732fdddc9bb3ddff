"""KVCache: GPU appends reach the host master exactly; streamed windows give resident bits; restore."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
from bonsai.kv.errors import KVError, NonFiniteKVError
from bonsai.kv.format import codec
from bonsai.kv.format.rotate import hadamard
from bonsai.reference.attention import reference

N_KV, HD, N_HEADS, LAYERS = 2, 64, 6, 2


def rows(rng, n, scale=1.0):
    return (rng.standard_normal((n, N_KV, HD)) * scale).astype(np.float32)


def fill(gpu, cache, layer, k, v, chunks):
    """Append k/v through GPU buffers in the given chunk sizes (crossing window boundaries)."""
    pos = 0
    for n in chunks:
        cache.append(layer, gpu.upload(k[pos: pos + n]), gpu.upload(v[pos: pos + n]), pos, n)
        pos += n
    return pos


def attend(gpu, cache, layer, q, pos_base):
    out = gpu.buffer(q.nbytes)
    cache.attend(layer, gpu.upload(q), out, pos_base, q.shape[0], q.shape[1])
    return np.frombuffer(gpu.read(out), np.float32).reshape(q.shape)


@pytest.mark.parametrize("mode", ["f32", "q4", "q4r"])
def test_gpu_appends_reach_the_host_master_bit_for_bit(gpu, mode):
    rng = np.random.default_rng(0)
    k, v = rows(rng, 45, 3), rows(rng, 45)
    cache = KVCache(gpu, LAYERS, N_KV, HD, 64, mode=mode, window=8)
    fill(gpu, cache, 1, k, v, [1, 7, 13, 3, 21])
    cache.sync_host()
    fmt = "f32" if mode == "f32" else "q4"
    assert cache.length == [0, 45]
    assert np.array_equal(cache.host_rows(1, "k"), codec.encode(hadamard(k) if mode == "q4r" else k, fmt))
    assert np.array_equal(cache.host_rows(1, "v"), codec.encode(v, fmt))


@pytest.mark.parametrize("mode", ["f32", "q4"])
def test_streamed_windows_give_the_resident_bits(gpu, mode):
    rng = np.random.default_rng(1)
    k, v = rows(rng, 40), rows(rng, 40)
    q_dec, q_pre = rows(rng, 1)[:, :1].repeat(N_HEADS, 1), rng.standard_normal((9, N_HEADS, HD)).astype(np.float32)
    resident = KVCache(gpu, LAYERS, N_KV, HD, 48, mode=mode, window=8)
    slot = resident.slot_bytes
    streamed = KVCache(gpu, LAYERS, N_KV, HD, 48, mode=mode, window=8, vram_budget=slot * 2 + 5)
    for cache in (resident, streamed):
        for layer in range(LAYERS):
            fill(gpu, cache, layer, k if layer else v, v if layer else k, [16, 11, 13])
        cache.sync_host()
    for layer in range(LAYERS):
        for q, pos_base in ((q_dec, 39), (q_pre, 31)):
            a, b = attend(gpu, resident, layer, q, pos_base), attend(gpu, streamed, layer, q, pos_base)
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
            ref = reference(q, resident.dequantised(layer, "k"), resident.dequantised(layer, "v"), pos_base)
            assert np.max(np.abs(a - ref)) <= 1e-5 * np.max(np.abs(ref))
    assert streamed.streamed_windows > 10 and resident.streamed_windows == 0
    assert streamed.max_slots == 2


def test_restore_rebuilds_windows_from_the_host_master(gpu):
    from bonsai.gpu.device import Gpu

    rng = np.random.default_rng(2)
    k, v, q = rows(rng, 30), rows(rng, 30), rng.standard_normal((1, N_HEADS, HD)).astype(np.float32)
    cache = KVCache(gpu, 1, N_KV, HD, 32, mode="q4", window=8)
    fill(gpu, cache, 0, k, v, [20, 10])
    cache.sync_host()
    before = attend(gpu, cache, 0, q, 29)
    fresh = Gpu.create()
    cache.restore(fresh)
    assert cache.streamed_windows == 4
    after = attend(fresh, cache, 0, q, 29)
    assert np.array_equal(before.view(np.uint32), after.view(np.uint32))


def test_non_finite_rows_are_refused_before_the_master(gpu):
    rng = np.random.default_rng(3)
    k, v = rows(rng, 10), rows(rng, 10)
    v[6, 1, 3] = np.nan
    cache = KVCache(gpu, 1, N_KV, HD, 16, mode="q4", window=8)
    fill(gpu, cache, 0, k, v, [4])
    cache.sync_host()
    fill(gpu, cache, 0, k, v, [4, 6])  # rows 0..3 again, then 4..9 with the NaN
    with pytest.raises(NonFiniteKVError, match="layer 0 position 6 V head 1: a NaN/inf value"):
        cache.sync_host()
    assert cache.length == [4]
    with pytest.raises(NonFiniteKVError, match="layer 0 V"):
        cache.append_host(0, k, v, 0)


def test_bytes_per_position_comes_from_the_buffers(gpu):
    assert KVCache(gpu, 1, 4, 128, 64, mode="q4").bytes_per_position() == 544
    assert KVCache(gpu, 1, 4, 128, 64, mode="f32").bytes_per_position() == 4096


def test_bad_budgets_and_ranges_are_clear_errors(gpu):
    with pytest.raises(KVError, match="below one window slot"):
        KVCache(gpu, 1, 4, 128, 64, mode="q4", vram_budget=100)
    cache = KVCache(gpu, 1, 4, 128, 64)
    with pytest.raises(KVError, match=r"positions \[60, 70\) outside the cache"):
        cache.append_host(0, np.zeros((10, 4, 128)), np.zeros((10, 4, 128)), 60)


def test_a_decode_step_costs_one_readback_and_attends_before_the_sync(gpu, monkeypatch):
    rng = np.random.default_rng(4)
    k, v, q = rows(rng, 20), rows(rng, 20), rng.standard_normal((1, N_HEADS, HD)).astype(np.float32)
    loose = KVCache(gpu, LAYERS, N_KV, HD, 24, mode="q4", window=4)
    tight = KVCache(gpu, LAYERS, N_KV, HD, 24, mode="q4", window=4, vram_budget=loose.slot_bytes)
    outs = {}
    for name, cache in (("loose", loose), ("tight", tight)):
        for layer in range(LAYERS):
            fill(gpu, cache, layer, k, v, [19])
        cache.sync_host()
        reads = []
        real_read = gpu.read_with  # every read goes through it
        monkeypatch.setattr(gpu, "read_with", lambda *a, _r=reads, _f=real_read, **kw: _r.append(a) or _f(*a, **kw))
        q_buf, out = gpu.upload(q), gpu.buffer(q.nbytes)
        for layer in range(LAYERS):  # one decode step: append position 19, attend over 0..19
            cache.append(layer, gpu.upload(k[19:]), gpu.upload(v[19:]), 19, 1)
            cache.attend(layer, q_buf, out, 19, 1, N_HEADS)
        cache.sync_host()
        monkeypatch.undo()
        if name == "loose":
            assert len(reads) == 1
        outs[name] = np.frombuffer(gpu.read(out), np.float32)
        assert cache.length == [20, 20]
    assert np.array_equal(outs["loose"].view(np.uint32), outs["tight"].view(np.uint32))
