"""KVCache in mixed and grouped-K modes: master == GPU, streamed == resident, restore, rewind, errors."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
from bonsai.kv.errors import KVError, NonFiniteKVError
from bonsai.kv.format import codec as formats
from bonsai.kv.format.codec import GROUP
from bonsai.reference.attention import reference

N_KV, HD, N_HEADS = 2, 64, 6


def rows(rng, n, scale=1.0):
    return (rng.standard_normal((n, N_KV, HD)) * scale).astype(np.float32)


def fill(gpu, cache, layer, k, v, chunks, pos=0):
    for n in chunks:
        cache.append(layer, gpu.upload(k[pos: pos + n]), gpu.upload(v[pos: pos + n]), pos, n)
        pos += n
    return pos


def attend(gpu, cache, layer, q, pos_base):
    out = gpu.buffer(q.nbytes)
    cache.attend(layer, gpu.upload(q), out, pos_base, q.shape[0], q.shape[1])
    return np.frombuffer(gpu.read(out), np.float32).reshape(q.shape)


def bits(a):
    return a.view(np.uint32)


@pytest.mark.parametrize("mode,window", [("k8v4", 8), ("kc4v4b", 32), ("kc4v4", 64), ("kc4av4a", 64), ("q4res", 64)])
def test_master_holds_the_formats_and_attention_reads_them(gpu, mode, window):
    rng = np.random.default_rng(0)
    k, v = rows(rng, 81, 3), rows(rng, 81)
    cache = KVCache(gpu, 2, N_KV, HD, 96, mode=mode, window=window)
    fill(gpu, cache, 1, k, v, [1, 7, 30, 3, 40])
    cache.sync_host()
    m = cache.layout.mode
    assert cache.length == [0, 81]
    if m.v_residual:  # V of the newest group is f32 in the residual, the full group quantised
        assert np.array_equal(cache.host_rows(1, "v")[:64], formats.encode(v[:64], m.v))
        assert np.array_equal(bits(cache.residual_rows(1, "v")[1]), bits(v[64:]))
    else:
        assert np.array_equal(cache.host_rows(1, "v"), formats.encode(v, m.v))
    if m.grouped:
        assert np.array_equal(cache.host_rows(1, "k")[:64], formats.encode(k[:64], m.k))
        start, res = cache.residual_rows(1)
        assert start == 64 and np.array_equal(bits(res), bits(k[64:]))
    else:
        assert np.array_equal(cache.host_rows(1, "k"), formats.encode(k, m.k))
    q = rng.standard_normal((5, N_HEADS, HD)).astype(np.float32)
    got = attend(gpu, cache, 1, q, 76)
    ref = reference(q, cache.dequantised(1, "k"), cache.dequantised(1, "v"), 76)
    assert np.max(np.abs(got - ref)) <= 1e-5 * np.max(np.abs(ref))


@pytest.mark.parametrize("mode", ["kc4v4", "q4res"])
@pytest.mark.parametrize("window,chunks", [(128, [200]), (128, [70, 130]), (64, [10, 190]), (256, [64, 136])],
                         ids=["groups of two windows", "a batch completing the residual's group", "window per group",
                              "from a group start"])
def test_a_batch_that_completes_groups_gives_the_bits_of_one_position_at_a_time(gpu, mode, window, chunks):
    """A batch quantises the groups it holds wholly straight from staging, a window's in one dispatch
    (`Residual.record_batch`), and the group the residual holds through the residual: the master holds the
    codec's rows, and attention reads the bits of the same rows appended one position at a time."""
    rng = np.random.default_rng(3)
    k, v = rows(rng, 200, 3), rows(rng, 200)
    q = rng.standard_normal((3, N_HEADS, HD)).astype(np.float32)
    runs = []
    for sizes in (chunks, [1] * 200):
        cache = KVCache(gpu, 1, N_KV, HD, 256, mode=mode, window=window)
        fill(gpu, cache, 0, k, v, sizes)
        cache.sync_host()
        runs.append((cache.master.layers[0], cache.residual_rows(0), cache.residual_rows(0, "v"),
                     bits(attend(gpu, cache, 0, q, 197))))
    m, G = cache.layout.mode, cache.layout.group
    done = 200 - 200 % G
    assert np.array_equal(cache.host_rows(0, "k")[:done], formats.encode(k[:done], m.k))
    (master, (start, res_k), (_, res_v), out), one = runs
    assert master == one[0] and start == one[1][0] == done
    assert np.array_equal(bits(res_k), bits(one[1][1])) and np.array_equal(bits(res_v), bits(one[2][1]))
    assert np.array_equal(out, one[3])


def test_a_batch_quantising_its_groups_from_rows_one_position_off_is_caught(gpu, monkeypatch):
    """Mutation: the groups wholly inside a batch read from staging one position late."""
    from bonsai.kv.residual import Residual

    real = Residual._group_kernels

    def one_late(self, src, k_word, v_word, g0, groups, slot, staging, out, params=None):
        rw = self.layout.f32_row_bytes // 4
        late = src is not self.bufs[0]
        return real(self, src, k_word + rw * late, v_word + rw * late, g0, groups, slot, staging, out, params)

    monkeypatch.setattr(Residual, "_group_kernels", one_late)
    rng = np.random.default_rng(3)
    k, v = rows(rng, 200, 3), rows(rng, 200)
    cache = KVCache(gpu, 1, N_KV, HD, 256, mode="q4res", window=128)
    fill(gpu, cache, 0, k, v, [200])
    cache.sync_host()
    assert not np.array_equal(cache.host_rows(0, "k")[:192], formats.encode(k[:192], cache.layout.mode.k))


@pytest.mark.parametrize("mode", ["kc4v4b", "q4res"])
def test_grouped_streamed_and_restored_windows_give_the_resident_bits(gpu, mode):
    from bonsai.gpu.device import Gpu

    rng = np.random.default_rng(1)
    k, v = rows(rng, 150), rows(rng, 150)
    q = rng.standard_normal((3, N_HEADS, HD)).astype(np.float32)
    resident = KVCache(gpu, 2, N_KV, HD, 192, mode=mode, window=64)
    streamed = KVCache(gpu, 2, N_KV, HD, 192, mode=mode, window=64, vram_budget=resident.slot_bytes + 7)
    for cache in (resident, streamed):
        for layer in range(2):
            fill(gpu, cache, layer, k if layer else v, v if layer else k, [16, 50, 34, 50])
        cache.sync_host()
    outs = [attend(gpu, c, layer, q, 147) for c in (resident, streamed) for layer in range(2)]
    assert np.array_equal(bits(outs[0]), bits(outs[2])) and np.array_equal(bits(outs[1]), bits(outs[3]))
    assert streamed.streamed_windows > 0 and resident.streamed_windows == 0
    resident.restore(Gpu.create())
    assert np.array_equal(bits(attend(resident.gpu, resident, 1, q, 147)), bits(outs[1]))
    ref = reference(q, resident.dequantised(1, "k"), resident.dequantised(1, "v"), 147)
    assert np.max(np.abs(outs[1] - ref)) <= 1e-5 * np.max(np.abs(ref))


@pytest.mark.parametrize("mode", ["kc4v4", "q4res"])
def test_rewinding_into_a_quantised_group_restarts_its_residual_from_what_attention_read(gpu, mode):
    rng = np.random.default_rng(2)
    G = 32 if mode == "kc4v4" else 64
    k, v = rows(rng, 3 * G), rows(rng, 3 * G)
    k2, v2 = rows(rng, 3 * G, 2), rows(rng, 3 * G)
    cache = KVCache(gpu, 1, N_KV, HD, 3 * G, mode=mode, window=G)
    fill(gpu, cache, 0, k, v, [2 * G + 6])
    cache.sync_host()
    r = G + 8  # rewind into group 1, which was quantised: its first 8 rows restart from what attention read
    seen_k = cache.dequantised(0, "k")[G:r].copy()
    seen_v = cache.dequantised(0, "v")[G:r].copy()
    fill(gpu, cache, 0, k2, v2, [10], pos=r)  # overwrite r..r+9
    cache.sync_host()
    start, res = cache.residual_rows(0)
    assert start == G and np.array_equal(bits(res[:8]), bits(seen_k)) and np.array_equal(bits(res[8:18]), bits(k2[r:r + 10]))
    if cache.layout.mode.v_residual:
        assert np.array_equal(bits(cache.residual_rows(0, "v")[1][:8]), bits(seen_v))
    q = rng.standard_normal((1, N_HEADS, HD)).astype(np.float32)
    got = attend(gpu, cache, 0, q, r + 9)
    kk = np.concatenate([cache.dequantised(0, "k")[:G], res[:18]])
    ref = reference(q, kk, cache.dequantised(0, "v")[: r + 10], r + 9)
    assert np.max(np.abs(got - ref)) <= 1e-5 * np.max(np.abs(ref))
    fill(gpu, cache, 0, k2, v2, [G], pos=r + 10)  # refill group 1 and go on: quantised from the residual
    cache.sync_host()
    want = formats.encode(np.concatenate([seen_k, k2[r: 2 * G]]), cache.layout.mode.k)
    assert np.array_equal(cache.host_rows(0, "k")[G: 2 * G], want)
    if cache.layout.mode.v_residual:
        want_v = formats.encode(np.concatenate([seen_v, v2[r: 2 * G]]), cache.layout.mode.v)
        assert np.array_equal(cache.host_rows(0, "v")[G: 2 * G], want_v)


def fill_two_layers(gpu, cache, k, v, start, n):
    """Rows [start, start + n) appended to layers 0 and 1 as one engine step does: no sync in between."""
    for layer in (0, 1):
        fill(gpu, cache, layer, k, v, [n], pos=start)


def test_a_prompt_fed_again_from_a_group_start_reads_nothing_back_until_the_sync(gpu, monkeypatch):
    rng = np.random.default_rng(4)
    k, v, k2, v2 = rows(rng, 160), rows(rng, 160), rows(rng, 160, 2), rows(rng, 160)
    cache = KVCache(gpu, 2, N_KV, HD, 256, mode="q4res", window=128)
    fill_two_layers(gpu, cache, k, v, 0, 134)
    cache.sync_host()
    reads = []
    real_read = gpu.read_with  # every read goes through it
    monkeypatch.setattr(gpu, "read_with", lambda *a, **kw: reads.append(a) or real_read(*a, **kw))
    fill_two_layers(gpu, cache, k2, v2, 64, 80)  # back to group 1's start (quantised): nothing of it is kept
    assert reads == []  # was: layer 1's restart synced layer 0's rows, a GPU round trip per layer
    cache.sync_host()
    fresh = KVCache(gpu, 2, N_KV, HD, 256, mode="q4res", window=128)
    fill_two_layers(gpu, fresh, k, v, 0, 64)
    fill_two_layers(gpu, fresh, k2, v2, 64, 80)
    fresh.sync_host()
    q = rng.standard_normal((1, N_HEADS, HD)).astype(np.float32)
    for layer in (0, 1):
        assert np.array_equal(cache.host_rows(layer, "k")[:128], fresh.host_rows(layer, "k")[:128])
        assert np.array_equal(bits(cache.residual_rows(layer)[1][:16]), bits(fresh.residual_rows(layer)[1][:16]))
        assert np.array_equal(bits(attend(gpu, cache, layer, q, 143)), bits(attend(gpu, fresh, layer, q, 143)))


def test_a_rewind_over_rows_not_yet_synced_syncs_that_layer_first(gpu):
    rng = np.random.default_rng(5)
    k, v = rows(rng, 160), rows(rng, 160)
    cache = KVCache(gpu, 2, N_KV, HD, 256, mode="q4res", window=128)
    fill_two_layers(gpu, cache, k, v, 0, 134)  # not synced: the restart below must take these rows first
    fill_two_layers(gpu, cache, k, v, 64, 10)
    cache.sync_host()
    assert cache.residual_rows(0)[0] == 64
    assert np.array_equal(bits(cache.residual_rows(1)[1][:10]), bits(k[64:74]))


def test_grouped_modes_refuse_unaligned_windows_and_oversized_k(gpu):
    with pytest.raises(KVError, match=f"multiple of {GROUP}"):
        KVCache(gpu, 1, N_KV, HD, 64, mode="kc4v4", window=24)
    k = np.ones((4, N_KV, HD), np.float32)
    k[2, 1, 3] = 5e5
    cache = KVCache(gpu, 1, N_KV, HD, 64, mode="kc4v4", window=32)
    fill(gpu, cache, 0, k, k, [4])
    with pytest.raises(NonFiniteKVError, match="layer 0 position 2 K head 1: a magnitude beyond"):
        cache.sync_host()
    with pytest.raises(NonFiniteKVError, match="layer 0 K"):
        cache.append_host(0, k, k, 0)


def test_bytes_per_position_of_every_mode_comes_from_the_buffers(gpu):
    sizes = {m: KVCache(gpu, 1, 3, 64, 64, mode=m, window=64).bytes_per_position()
             for m in ("f32", "q8", "q4", "q4b", "k8v4", "kc4v4b", "kc4av4a")}
    assert sizes == {"f32": 1536, "q8": 408, "q4": 216, "q4b": 216, "k8v4": 312, "kc4v4b": 216, "kc4av4a": 216}
    assert KVCache(gpu, 1, 3, 64, 64, mode="kc4v4b", window=32).residual_bytes() == GROUP * 3 * 64 * 4
