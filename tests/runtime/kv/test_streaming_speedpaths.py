"""The fast paths added for real GPUs keep the bits: staged uploads, in-pass scatter, step params."""

from __future__ import annotations

import numpy as np

from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
from bonsai.gpu.transfer import StagingRing as _StagingRing


def test_write_staged_lands_the_same_bytes_through_a_reused_ring(gpu):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 2**32, (13 << 20) // 16 + 3, dtype=np.uint32)  # 3.25 MiB + 12 bytes
    dst = gpu.buffer(data.nbytes + 64)
    saved = getattr(gpu, "_ring", None)
    gpu._ring = _StagingRing(gpu, count=2, chunk=1 << 20, threads=3)  # 4 chunks: the ring is re-mapped
    try:
        gpu.write_staged(dst, data, offset=32, threads=3)
        got = np.frombuffer(gpu.read(dst, data.nbytes, 32), np.uint32)
    finally:
        if saved is None:
            del gpu._ring
        else:
            gpu._ring = saved
    assert np.array_equal(got, data)
    # a mutation: one byte changed on the host after the upload must show as a difference
    data[12345] ^= 1
    assert not np.array_equal(got, data)


def test_streamed_large_windows_give_the_resident_bits(gpu):
    # windows of 128 positions x 1 KV head x 64 dims x f32 x (K, V) = 64 KiB: the staged upload path
    rng = np.random.default_rng(4)
    n, n_kv, hd, heads = 512, 1, 64, 2
    k = rng.standard_normal((n, n_kv, hd)).astype(np.float32)
    v = rng.standard_normal((n, n_kv, hd)).astype(np.float32)
    q = rng.standard_normal((1, heads, hd)).astype(np.float32)
    outs = []
    for budget in (None, 64 << 10):
        cache = KVCache(gpu, 1, n_kv, hd, n, window=128, vram_budget=budget)
        assert cache.slot_bytes >= 64 << 10
        cache.append_host(0, k, v, 0)
        out = gpu.buffer(q.nbytes)
        cache.attend(0, gpu.upload(q), out, n - 1, 1, heads)
        outs.append(np.frombuffer(gpu.read(out), np.uint32))
        if budget is not None:
            assert cache.streamed_windows >= 4
    assert np.array_equal(outs[0], outs[1])


def test_a_decode_step_prepared_before_recording_records_in_one_submit(gpu):
    rng = np.random.default_rng(5)
    n_kv, hd, heads, layers = 1, 64, 2, 3
    cache = KVCache(gpu, layers, n_kv, hd, 64, window=16)
    k = rng.standard_normal((20, n_kv, hd)).astype(np.float32)
    for layer in range(layers):
        cache.append_host(layer, k, k, 0)
    kb, vb, qb, out = gpu.upload(k[:1]), gpu.upload(k[:1]), gpu.upload(k[:1].repeat(heads, 1)), gpu.buffer(heads * hd * 4)

    def step(pos):
        cache.prepare(pos, 1, heads)
        gpu.flush()
        submits = []
        real = gpu.queue.submit
        gpu.queue.submit = lambda bufs, _s=submits, _r=real: _s.append(1) or _r(bufs)
        try:
            for layer in range(layers):
                cache.append(layer, kb, vb, pos, 1)
                cache.attend(layer, qb, out, pos, 1, heads)
            gpu.flush()
        finally:
            del gpu.queue.submit
        return len(submits)

    step(20)  # first step creates the parameter buffers
    assert step(21) == 1
    cache.sync_host()
    assert np.array_equal(cache.host_rows(0, "k")[21].view(np.float32), k[0])
