"""Window streaming through host pages: a GPU copy from host RAM that mirrors the master, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
from bonsai.gpu.device import Gpu
from bonsai.kv.cache import KVCache as PureKVCache


class _WithoutPages:
    """The same GPU, seen as a backend without host pages (as the browser's is)."""

    def __init__(self, gpu):
        self._gpu = gpu

    def __getattr__(self, name):
        if name == "has_host_pages":
            return False
        return getattr(self._gpu, name)


def test_host_pages_are_checked_once_per_device_and_refused_when_the_bits_do_not_arrive(gpu, monkeypatch):
    assert gpu.has_host_pages  # lavapipe offers mappable-primary-buffers: the round trip passed
    # pages mirror the master only where windows are streamed again and again: under a VRAM budget
    assert KVCache(gpu, 1, 1, 64, 32, window=8, vram_budget=1 << 12)._slots._pages == {}
    assert KVCache(gpu, 1, 1, 64, 32, window=8)._slots._pages is None
    # mutation: a driver whose mapped writes never reach the GPU's copies
    monkeypatch.delattr(gpu, "_host_pages_ok")
    monkeypatch.setattr(Gpu, "fill_page", lambda self, page, data, offset=0: None)
    assert not gpu.has_host_pages
    assert KVCache(gpu, 1, 1, 64, 32, window=8, vram_budget=1 << 12)._slots._pages is None


def test_a_page_filled_after_a_recorded_copy_does_not_change_what_that_copy_reads(gpu):
    old, new = np.arange(64, dtype=np.uint32), np.arange(64, dtype=np.uint32) + 1000
    page = gpu.host_page(old.nbytes)
    gpu.fill_page(page, old)
    first, second = gpu.buffer(old.nbytes), gpu.buffer(old.nbytes)
    gpu.stream(page, 0, first, 0, old.nbytes)  # recorded, not submitted
    gpu.fill_page(page, new[8:], 32)  # a partial refill: words 8.. change
    gpu.stream(page, 0, second, 0, old.nbytes)
    assert np.array_equal(np.frombuffer(gpu.read(first), np.uint32), old)
    assert np.array_equal(np.frombuffer(gpu.read(second), np.uint32), np.concatenate([old[:8], new[8:]]))


def test_a_page_filled_at_an_offset_that_is_not_a_multiple_of_8_gets_exactly_those_bytes(gpu):
    # mapped ranges must start at multiples of 8, and a q4 row of one 64-wide head is 36 bytes: a
    # window refreshed from an odd row on failed with "Mapped offset must be a multiple of 8"
    old, new = np.arange(64, dtype=np.uint32), np.arange(64, dtype=np.uint32) + 1000
    page = gpu.host_page(old.nbytes)
    gpu.fill_page(page, old)
    gpu.fill_page(page, new[9:18], 36)
    dst = gpu.buffer(old.nbytes)
    gpu.stream(page, 0, dst, 0, old.nbytes)
    assert np.array_equal(np.frombuffer(gpu.read(dst), np.uint32), np.concatenate([old[:9], new[9:18], old[18:]]))


def test_a_page_refilled_without_submitting_its_recorded_copy_first_is_caught(gpu, monkeypatch):
    # mutation: `stream` forgets which encoder read the page, so `fill_page` does not flush first
    real = Gpu.stream

    def forgetful(self, page, *args):
        real(self, page, *args)
        page.encoder = None

    monkeypatch.setattr(Gpu, "stream", forgetful)
    old, new = np.arange(64, dtype=np.uint32), np.arange(64, dtype=np.uint32) + 1000
    page = gpu.host_page(old.nbytes)
    gpu.fill_page(page, old)
    first = gpu.buffer(old.nbytes)
    gpu.stream(page, 0, first, 0, old.nbytes)
    gpu.fill_page(page, new)
    assert not np.array_equal(np.frombuffer(gpu.read(first), np.uint32), old)


def _decode(gpu, cache, positions, rng, n_kv, hd, heads):
    """Append one position per step on the GPU (synced like the engine), attend over all: outputs as bits."""
    outs = []
    out = gpu.buffer(heads * hd * 4)
    for pos in positions:
        kv = rng.standard_normal((2, 1, n_kv, hd)).astype(np.float32)
        cache.append(0, gpu.upload(kv[0]), gpu.upload(kv[1]), pos, 1)
        q = rng.standard_normal((1, heads, hd)).astype(np.float32)
        cache.attend(0, gpu.upload(q), out, pos, 1, heads)
        cache.sync_host()
        outs.append(np.frombuffer(gpu.read(out), np.uint32).copy())
    return outs


@pytest.mark.parametrize("mode", ["f32", "q4"])
def test_decoding_through_host_pages_gives_the_resident_bits(gpu, mode):
    # 4 windows of 8 positions, 2 slots: full windows take turns in one slot, each through its page;
    # then a rewind to position 4 rewrites rows of windows whose pages were filled: they must refresh
    n_kv, hd, heads = 1, 64, 2
    steps = [*range(30), *range(4, 30)]
    resident = KVCache(gpu, 1, n_kv, hd, 32, mode=mode, window=8)
    streamed = KVCache(gpu, 1, n_kv, hd, 32, mode=mode, window=8, vram_budget=2 * resident.slot_bytes)
    want = _decode(gpu, resident, steps, np.random.default_rng(7), n_kv, hd, heads)
    got = _decode(gpu, streamed, steps, np.random.default_rng(7), n_kv, hd, heads)
    assert streamed.streamed_windows > len(steps) and len(streamed._slots._pages) == 4
    assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))


def test_a_page_not_refreshed_after_the_master_changed_is_caught(gpu, monkeypatch):
    # mutation: master writes stop marking pages stale, so a re-streamed window misses its newest rows
    from bonsai.kv.slots import Slots

    monkeypatch.setattr(Slots, "mark_stale", lambda self, layer, changed: None)
    n_kv, hd, heads = 1, 64, 2
    steps = [*range(30), *range(4, 30)]
    resident = KVCache(gpu, 1, n_kv, hd, 32, window=8)
    streamed = KVCache(gpu, 1, n_kv, hd, 32, window=8, vram_budget=2 * resident.slot_bytes)
    want = _decode(gpu, resident, steps, np.random.default_rng(7), n_kv, hd, heads)
    got = _decode(gpu, streamed, steps, np.random.default_rng(7), n_kv, hd, heads)
    assert not all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))


def _walks(gpu, cache, calls, heads):
    q, out = gpu.upload(np.ones((1, heads, cache.head_dim), np.float32)), gpu.buffer(heads * cache.head_dim * 4)
    for _ in range(calls):
        cache.attend(0, q, out, cache.length[0] - 1, 1, heads)
    return np.frombuffer(gpu.read(out), np.uint32)


def test_streaming_fresh_pages_copies_on_the_gpu_only_and_reuses_the_most_recent_slot(gpu, monkeypatch):
    n_kv, hd, heads = 1, 64, 2
    cache = KVCache(gpu, 1, n_kv, hd, 64, window=8)
    streamed = KVCache(gpu, 1, n_kv, hd, 64, window=8, vram_budget=2 * cache.slot_bytes)
    kv = np.random.default_rng(8).standard_normal((64, n_kv, hd)).astype(np.float32)
    for c in (cache, streamed):
        c.append_host(0, kv, kv, 0)
    want = _walks(gpu, cache, 1, heads)
    assert np.array_equal(_walks(gpu, streamed, 1, heads), want)  # fills the 8 pages once
    host_writes = []
    for verb in ("write", "write_staged", "fill_page"):
        real = getattr(Gpu, verb)
        monkeypatch.setattr(Gpu, verb, lambda self, *a, _r=real, _v=verb, **k: host_writes.append(_v) or _r(self, *a, **k))
    before = streamed.streamed_windows
    assert np.array_equal(_walks(gpu, streamed, 3, heads), want)
    assert host_writes == []
    # 8 windows, 2 slots: reusing the most recently used slot keeps a window across walks (6 or 7
    # streamed per walk); LRU would evict each window just before it is needed: 8 per walk
    assert streamed.streamed_windows - before <= 3 * 7


def test_evicting_the_least_recently_used_slot_instead_is_caught(gpu, monkeypatch):
    # mutation: LRU eviction streams every window on every walk
    from bonsai.kv.slots import Slots

    monkeypatch.setattr(Slots, "_victim", lambda self: next(iter(self.resident)))
    n_kv, hd, heads = 1, 64, 2
    cache = KVCache(gpu, 1, n_kv, hd, 64, window=8, vram_budget=2 * 8 * n_kv * hd * 4 * 2)
    kv = np.random.default_rng(8).standard_normal((64, n_kv, hd)).astype(np.float32)
    cache.append_host(0, kv, kv, 0)
    _walks(gpu, cache, 1, heads)
    before = cache.streamed_windows
    _walks(gpu, cache, 3, heads)
    assert cache.streamed_windows - before == 3 * 8


def test_a_backend_without_host_pages_streams_the_same_bits(gpu):
    n_kv, hd, heads = 1, 64, 2
    steps = [*range(20), *range(4, 20)]
    resident = PureKVCache(gpu, 1, n_kv, hd, 32, window=8)
    plain = PureKVCache(_WithoutPages(gpu), 1, n_kv, hd, 32, window=8, vram_budget=2 * resident.slot_bytes)
    assert plain._slots._pages is None
    want = _decode(gpu, resident, steps, np.random.default_rng(9), n_kv, hd, heads)
    got = _decode(gpu, plain, steps, np.random.default_rng(9), n_kv, hd, heads)
    assert plain.streamed_windows >= 10
    assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))


def test_a_q4_window_streamed_again_after_an_odd_row_was_appended_gives_the_resident_bits(gpu):
    # q4 rows of one 64-wide head are 36 bytes: row 17 starts at a page offset of 4 mod 8, which
    # mapping the page at that offset refused (the walk raised instead of streaming the window)
    rng = np.random.default_rng(3)
    kv = rng.standard_normal((18, 1, 64)).astype(np.float32)
    resident = KVCache(gpu, 1, 1, 64, 32, mode="q4", window=8)
    streamed = KVCache(gpu, 1, 1, 64, 32, mode="q4", window=8, vram_budget=2 * resident.slot_bytes)
    for cache in (resident, streamed):
        cache.append_host(0, kv[:17], kv[:17], 0)
    _walks(gpu, streamed, 1, 2)  # every window gets a page
    for cache in (resident, streamed):
        cache.append_host(0, kv[17:], kv[17:], 17)
    assert np.array_equal(_walks(gpu, streamed, 2, 2), _walks(gpu, resident, 1, 2))
