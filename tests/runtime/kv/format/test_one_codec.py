"""One codec: the host master receives exactly the rows the GPU kernels wrote, in every mode.

The cache never quantises on the host (it is pure Python: the browser runs it). Rows appended on
the GPU must reach the master bit for bit as the numpy codec (the kernels' oracle) would have
written them, grouped modes included, where the group kernel's own output is read back.
"""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics.numpy_cache import NumpyKVCache
from bonsai.kv.cache import KVCache
from bonsai.kv.errors import KVError
from bonsai.kv.layout import Layout

N_KV, HD, N_HEADS = 2, 64, 4
CHUNKS = (3, 9, 1, 60, 12, 70)  # uneven appends across windows of 64 and groups of 32 / 64
TOTAL = sum(CHUNKS)


def _rows(seed, n=TOTAL):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, N_KV, HD)) * 2).astype(np.float32), rng.standard_normal((n, N_KV, HD)).astype(np.float32)


def _fill(gpu, mode, k, v, *, on_gpu, budget=None, chunks=CHUNKS):
    cache = NumpyKVCache(gpu, 1, N_KV, HD, 256, mode=mode, window=64, vram_budget=budget)
    pos = 0
    for n in chunks:
        if on_gpu:
            cache.append(0, gpu.upload(k[pos: pos + n]), gpu.upload(v[pos: pos + n]), pos, n)
        else:
            cache.append_host(0, k[pos: pos + n], v[pos: pos + n], pos)
        pos += n
    cache.sync_host()
    return cache


def _attend(gpu, cache, q):
    out = gpu.buffer(q.nbytes)
    cache.attend(0, gpu.upload(q), out, cache.length[0] - q.shape[0], q.shape[0], N_HEADS)
    return gpu.read(out)


@pytest.mark.parametrize("mode", ["q4", "k8v4a", "kc4v4b", "q4res"])
def test_gpu_appends_give_the_master_the_numpy_codec_rows(gpu, mode):
    k, v = _rows(7)
    q = np.random.default_rng(3).standard_normal((2, N_HEADS, HD)).astype(np.float32)
    on_gpu, on_host = _fill(gpu, mode, k, v, on_gpu=True), _fill(gpu, mode, k, v, on_gpu=False)
    assert bytes(on_gpu.master.layers[0]) == bytes(on_host.master.layers[0])
    k_rows = on_gpu.host_rows(0, "k")[:128]
    assert np.count_nonzero(k_rows) > k_rows.size // 2  # real rows, not two empty masters
    if on_gpu.residual is not None:  # the newest group: f32 rows, on the host as on the GPU
        assert on_gpu.residual.host_start == on_host.residual.host_start == [128]
        assert on_gpu.residual.host_words(0) == on_host.residual.host_words(0)
        # the GPU buffer holds the same rows (past them: the previous group's, never read)
        used, size = (TOTAL - 128) * N_KV * HD * 4, len(on_gpu.residual.host_k[0])
        on_device = gpu.read(on_gpu.residual.bufs[0])
        for block in range(2 if on_gpu.residual.v_res else 1):
            assert on_device[block * size: block * size + used] == on_gpu.residual.host_words(0)[block * size: block * size + used]
    assert _attend(gpu, on_gpu, q) == _attend(gpu, on_host, q)


@pytest.mark.parametrize(("old", "new", "chunks"), [
    ("if (STAGED_IS_SRC) { src[at] = word; }", "if (STAGED_IS_SRC) { src[at + 1u] = word; }", (130, 25)),
    ("} else { staged[at] = word; }", "} else { staged[at + 1u] = word; }", CHUNKS),
], ids=["a batch's groups staged one word late", "a filled group staged one word late"])
def test_groups_staged_off_their_place_are_caught(gpu, monkeypatch, old, new, chunks):
    """Mutation: the group kernel writes the quantised groups into staging (the master's copy) one word late, for
    the groups a batch completes (quantised from staging into staging) or those filled in the residual."""
    from tests.helpers.shader_patch import patch_shader

    k, v = _rows(7)
    want = _fill(gpu, "q4res", k, v, on_gpu=False, chunks=chunks)
    patch_shader(monkeypatch, gpu, "group.wgsl", old, new)
    assert bytes(_fill(gpu, "q4res", k, v, on_gpu=True, chunks=chunks).master.layers[0]) != bytes(want.master.layers[0])
    monkeypatch.undo()  # the kernels as they are: the same master as the host's codec
    assert bytes(_fill(gpu, "q4res", k, v, on_gpu=True, chunks=chunks).master.layers[0]) == bytes(want.master.layers[0])


def test_the_pure_cache_runs_grouped_modes_and_streams_them_from_its_master(gpu):
    """KVCache (no numpy anywhere) in q4res under a budget of two slots: the same attention bits."""
    k, v = _rows(9)
    q = np.random.default_rng(4).standard_normal((1, N_HEADS, HD)).astype(np.float32)
    want = _attend(gpu, _fill(gpu, "q4res", k, v, on_gpu=True), q)
    slot = KVCache(gpu, 1, N_KV, HD, 256, mode="q4res", window=64).slot_bytes
    pure = KVCache(gpu, 1, N_KV, HD, 256, mode="q4res", window=64, vram_budget=2 * slot)
    pos = 0
    for n in CHUNKS:
        pure.append(0, gpu.upload(k[pos: pos + n]), gpu.upload(v[pos: pos + n]), pos, n)
        pos += n
    pure.sync_host()
    assert pure.max_slots == 2 and _attend(gpu, pure, q) == want and pure.streamed_windows > 0


def test_a_master_that_drops_a_window_piece_is_caught(gpu, monkeypatch):
    """Mutation: a master that skips the second window piece of a run no longer matches the oracle."""
    k, v = _rows(8)
    want = _fill(gpu, "q4", k, v, on_gpu=False).master.layers[0]
    real = Layout.runs

    def drop_second_piece(self, kind, start, end):
        pieces = list(real(self, kind, start, end))
        return iter(pieces[:1] + pieces[2:])

    monkeypatch.setattr(Layout, "runs", drop_second_piece)
    assert bytes(_fill(gpu, "q4", k, v, on_gpu=True).master.layers[0]) != bytes(want)


def test_a_group_quantised_on_the_host_instead_of_read_back_would_be_caught(gpu, monkeypatch):
    """Mutation: committing a group's rows shifted by one position (a codec that disagrees) changes the master."""
    from bonsai.kv.master import HostMaster

    k, v = _rows(10)
    want = bytes(_fill(gpu, "q4res", k, v, on_gpu=False).master.layers[0])
    real = HostMaster.commit

    def shifted(self, e, k_rows, v_rows, residual):
        if e.group:
            k_rows = bytes(k_rows)[4:] + bytes(k_rows)[:4]
        return real(self, e, k_rows, v_rows, residual)

    monkeypatch.setattr(HostMaster, "commit", shifted)
    assert bytes(_fill(gpu, "q4res", k, v, on_gpu=True).master.layers[0]) != want


def test_sync_host_brings_back_extra_bytes_in_the_same_readback(gpu):
    """The engine's token rides with the master readback: the bytes are the buffer's, the master is intact."""
    k, v = _rows(11, 5)
    token = gpu.upload(np.array([123456789, 7], np.uint32))
    with_token, plain = (KVCache(gpu, 1, N_KV, HD, 16, mode="q4", window=8) for _ in range(2))
    for cache in (with_token, plain):
        cache.append(0, gpu.upload(k), gpu.upload(v), 0, 5)
    reads = gpu.read_with  # every read goes through it
    count = []
    gpu.read_with = lambda *a, **kw: count.append(1) or reads(*a, **kw)
    try:
        assert with_token.sync_host(also=(token, 4)) == np.uint32(123456789).tobytes()
        assert len(count) == 1  # one round trip for both
    finally:
        del gpu.read_with
    assert plain.sync_host() == b""
    assert bytes(with_token.master.layers[0]) == bytes(plain.master.layers[0]) and with_token.length == [5]
    assert with_token.sync_host(also=(token, 8)) == np.array([123456789, 7], np.uint32).tobytes()  # nothing pending
    with pytest.raises(KVError, match="1..256 bytes"):
        with_token.sync_host(also=(token, 257))
