"""The pure-Python KVCache (what the browser runs) keeps the same master and attention as NumpyKVCache."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.kv.cache import KVCache
from bonsai.kv.errors import KVError
from bonsai.kv.numpy_host import NumpyKVCache

N_KV, HD, N_HEADS = 2, 64, 4


def _run(gpu, cls, mode, k, v, q, budget=None):
    """Append k/v in uneven chunks across windows, sync, attend with q; (master bytes, attention out)."""
    cache = cls(gpu, 1, N_KV, HD, 40, mode=mode, window=8, vram_budget=budget)
    pos = 0
    for n in (3, 9, 1, 12):
        cache.append(0, gpu.upload(k[pos: pos + n]), gpu.upload(v[pos: pos + n]), pos, n)
        pos += n
    cache.sync_host()
    out = gpu.buffer(q.nbytes)
    cache.attend(0, gpu.upload(q), out, pos - q.shape[0], q.shape[0], N_HEADS)
    return bytes(b"".join(bytes(h) for h in cache._host)), gpu.read(out)


@pytest.mark.parametrize("mode", ["q4", "k8v4a"])
def test_pure_cache_master_and_attention_equal_the_numpy_cache(gpu, mode):
    rng = np.random.default_rng(7)
    k, v = (rng.standard_normal((25, N_KV, HD)) * 2).astype(np.float32), rng.standard_normal((25, N_KV, HD)).astype(np.float32)
    q = rng.standard_normal((2, N_HEADS, HD)).astype(np.float32)
    slot = NumpyKVCache(gpu, 1, N_KV, HD, 40, mode=mode, window=8).slot_bytes
    want = _run(gpu, NumpyKVCache, mode, k, v, q)
    assert _run(gpu, KVCache, mode, k, v, q) == want
    # streaming from the pure master (a budget of two slots) gives the same bits
    assert _run(gpu, KVCache, mode, k, v, q, budget=2 * slot)[1] == want[1]
    # and the master holds real rows (the comparison above is not between two empty caches)
    assert want[0].count(0) < len(want[0]) // 2


def test_a_master_bug_is_detected(gpu, monkeypatch):
    """Mutation: a pure master that drops one window piece no longer matches the numpy cache's."""
    rng = np.random.default_rng(8)
    k, v = (rng.standard_normal((25, N_KV, HD)).astype(np.float32) for _ in range(2))
    q = rng.standard_normal((1, N_HEADS, HD)).astype(np.float32)
    want = _run(gpu, NumpyKVCache, "q4", k, v, q)
    real = KVCache._runs

    def drop_second_piece(self, kind, start, end):
        pieces = list(real(self, kind, start, end))
        return pieces[:1] + pieces[2:]

    monkeypatch.setattr(KVCache, "_runs", drop_second_piece)
    assert _run(gpu, KVCache, "q4", k, v, q)[0] != want[0]


def test_grouped_modes_need_the_numpy_cache(gpu):
    with pytest.raises(KVError, match="NumpyKVCache"):
        KVCache(gpu, 1, N_KV, HD, 64, mode="q4res", window=64)


def test_sync_host_brings_back_extra_bytes_in_the_same_readback(gpu):
    """The engine's token rides with the master readback: the bytes are the buffer's, the master is intact."""
    rng = np.random.default_rng(9)
    k, v = rng.standard_normal((5, N_KV, HD)).astype(np.float32), rng.standard_normal((5, N_KV, HD)).astype(np.float32)
    token = gpu.upload(np.array([123456789, 7], np.uint32))
    with_token, plain = (KVCache(gpu, 1, N_KV, HD, 16, mode="q4", window=8) for _ in range(2))
    for cache in (with_token, plain):
        cache.append(0, gpu.upload(k), gpu.upload(v), 0, 5)
    reads = gpu.read
    count = []
    gpu.read = lambda *a, **kw: count.append(1) or reads(*a, **kw)
    try:
        assert with_token.sync_host(also=(token, 4)) == np.uint32(123456789).tobytes()
        assert len(count) == 1  # one round trip for both
    finally:
        del gpu.read
    assert plain.sync_host() == b""
    assert bytes(with_token._host[0]) == bytes(plain._host[0]) and with_token.length == [5]
    assert with_token.sync_host(also=(token, 8)) == np.array([123456789, 7], np.uint32).tobytes()  # nothing pending
    with pytest.raises(KVError, match="1..64 bytes"):
        with_token.sync_host(also=(token, 65))
