"""Rows read ahead between a batch's layers (`KVCache.read_ahead`): the sync commits the same host master and
residual as one read at its end, refuses the same rows, and a step refused part-way leaves nothing a re-run
of it does not overwrite."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
from bonsai.kv import staging
from bonsai.kv.errors import NonFiniteKVError
from bonsai.kv.staging import Staging

LAYERS, N_KV, HD = 4, 2, 64
BATCHES = (20, 50, 30)  # 100 positions: the grouped modes fill their first 64-position group in the second
MODES = ["f32", "q4res", "kc4v4", "k8v4"]


def _rows(seed: int, n: int = sum(BATCHES)) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k, v = (rng.standard_normal((2, LAYERS, n, N_KV, HD)) * 2).astype(np.float32)
    return k, v


def _append_batch(gpu, cache, k, v, pos: int, n: int, ahead: bool) -> None:
    """Rows [pos, pos+n) of every layer, a read ahead started before each layer after the first (as the forward
    pass does between its submits)."""
    for layer in range(LAYERS):
        if ahead and layer:
            assert cache.read_ahead()  # there were new rows to read
        cache.append(layer, gpu.upload(k[layer, pos: pos + n]), gpu.upload(v[layer, pos: pos + n]), pos, n)


def _state(cache) -> tuple:
    """(host master bytes, lengths, residual starts and rows)."""
    res = cache.residual
    residual = None if res is None else (list(res.host_start), [bytes(b) for b in res.host_k + res.host_v])
    return b"".join(bytes(h) for h in cache.master.layers), list(cache.length), residual


def _filled(gpu, mode: str, ahead: bool, k, v) -> tuple:
    cache = KVCache(gpu, LAYERS, N_KV, HD, 128, mode=mode, window=64)
    pos = 0
    for n in BATCHES:
        _append_batch(gpu, cache, k, v, pos, n, ahead)
        cache.sync_host()
        pos += n
    return _state(cache)


def _count_reads(gpu, monkeypatch) -> list[int]:
    """The reads staging starts from now on (a q4res batch's gathered: `Entry.skip`)."""
    reads: list[int] = []
    queued, gathered = gpu.read_queued, gpu.read_gathered
    monkeypatch.setattr(gpu, "read_queued", lambda buf, n, off=0: reads.append(n) or queued(buf, n, off))
    monkeypatch.setattr(gpu, "read_gathered", lambda buf, spans: reads.append(sum(n for _, n in spans))
                        or gathered(buf, spans))
    return reads


@pytest.mark.parametrize("mode", MODES)
def test_rows_read_ahead_reach_the_master_as_one_read_brings_them(gpu, mode, monkeypatch):
    k, v = _rows(1)
    one = _filled(gpu, mode, False, k, v)
    reads = _count_reads(gpu, monkeypatch)
    ahead = _filled(gpu, mode, True, k, v)
    assert len(reads) == LAYERS * len(BATCHES)  # the reads ahead, and each sync's read of the rest
    assert ahead == one and one[1] == [sum(BATCHES)] * LAYERS


def test_a_read_ahead_from_the_wrong_word_is_caught(gpu, monkeypatch):
    """Mutation: every read ahead starts at staging word 0 (the first layer's rows again)."""
    k, v = _rows(2)
    one = _filled(gpu, "f32", False, k, v)
    real = gpu.read_queued
    monkeypatch.setattr(gpu, "read_queued", lambda buf, n, off=0: real(buf, n, 0))
    try:
        got = _filled(gpu, "f32", True, k, v)
    except NonFiniteKVError:  # or the rows' words were taken for flags
        got = None
    assert got != one


def _refused(gpu, mode: str, layer: int) -> str | None:
    """Sync one batch read ahead whose rows of `layer` hold an overflow at position 7: the refusal's message
    (None: the sync took them)."""
    k, v = _rows(3)
    k[layer, 7, 1, 5] = 5e5 if mode != "f32" else np.inf
    cache = KVCache(gpu, LAYERS, N_KV, HD, 128, mode=mode, window=64)
    _append_batch(gpu, cache, k, v, 0, BATCHES[0], ahead=True)
    try:
        cache.sync_host()
    except NonFiniteKVError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("mode", ["f32", "kc4v4"])
@pytest.mark.parametrize("layer", [0, 2, LAYERS - 1])
def test_a_read_ahead_refuses_rows_as_the_sync_does(gpu, mode, layer):
    assert _refused(gpu, mode, layer) == _expected(layer, mode)


def _expected(layer: int, mode: str) -> str:
    why = "a NaN/inf value" if mode == "f32" else "a magnitude beyond the format's f16 scale"
    return f"layer {layer} position 7 K head 1: {why}; the rows appended since the last sync were not cached"


def test_a_read_ahead_whose_flags_are_not_read_is_caught(gpu, monkeypatch):
    """Mutation: a read ahead checks the flags of the sync's own read (from flag 0) instead of its own."""
    real = Staging._read_rows
    monkeypatch.setattr(Staging, "_read_rows", lambda self, pending, raw, flag, words:
                        real(self, pending, raw, 0, words) if flag else real(self, pending, raw, flag, words))
    assert _refused(gpu, "f32", 2) != _expected(2, "f32")


@pytest.mark.parametrize("mode", ["f32", "q4res"])
def test_a_step_refused_after_a_read_ahead_is_rerun_to_the_same_master(gpu, mode):
    """The first layers' rows reached the master before a later layer's were refused; the engine then stays at
    the step's start and feeds it again: the master ends as if the refused step had never run."""
    k, v = _rows(4)
    clean = _filled(gpu, mode, True, k, v)
    bad_k = k.copy()
    bad_k[LAYERS - 1, BATCHES[0] + 3, 0, 0] = np.nan
    cache = KVCache(gpu, LAYERS, N_KV, HD, 128, mode=mode, window=64)
    _append_batch(gpu, cache, k, v, 0, BATCHES[0], ahead=True)
    cache.sync_host()
    _append_batch(gpu, cache, bad_k, v, BATCHES[0], BATCHES[1], ahead=True)
    with pytest.raises(NonFiniteKVError, match=f"layer {LAYERS - 1} position {BATCHES[0] + 3} K head 0"):
        cache.sync_host()
    assert cache.length[0] == BATCHES[0] + BATCHES[1]  # layer 0's rows went in before the refusal
    pos = BATCHES[0]
    for n in BATCHES[1:]:
        _append_batch(gpu, cache, k, v, pos, n, ahead=True)
        cache.sync_host()
        pos += n
    assert _state(cache) == clean


def _sync_events(gpu, monkeypatch, k, v) -> list[str]:
    """The order in which the sync of one batch read ahead (submitted after every layer, as the forward does) reads
    its last rows, submits and commits the reads ahead."""
    cache = KVCache(gpu, LAYERS, N_KV, HD, 128, mode="f32", window=64)
    for layer in range(LAYERS):
        if layer:
            cache.read_ahead()
            gpu.flush()
        cache.append(layer, gpu.upload(k[layer, :BATCHES[0]]), gpu.upload(v[layer, :BATCHES[0]]), 0, BATCHES[0])
    events: list[str] = []
    flush, read, commit = gpu.flush, gpu.read_queued, Staging._commit_read
    monkeypatch.setattr(gpu, "flush", lambda: events.append("submit") or flush())
    monkeypatch.setattr(gpu, "read_queued", lambda buf, n, off=0: events.append("last read") or read(buf, n, off))
    monkeypatch.setattr(Staging, "_commit_read", lambda self, *a: events.append("commit ahead") or commit(self, *a))
    cache.sync_host()
    monkeypatch.setattr(gpu, "flush", flush)
    return events


def test_the_last_rows_are_submitted_before_the_reads_ahead_are_committed(gpu, monkeypatch):
    """The GPU runs the step's last layers (recorded, not yet submitted) while the host commits the first ones."""
    k, v = _rows(5)
    events = _sync_events(gpu, monkeypatch, k, v)
    assert events[:2] == ["last read", "submit"] and events.count("commit ahead") == LAYERS - 1


def test_a_sync_that_commits_the_reads_ahead_before_submitting_the_rest_is_caught(gpu, monkeypatch):
    """Mutation: the rest read (and submitted) only after the commits ahead, the order read_ahead replaces."""
    monkeypatch.setattr(staging, "LAST_READ_FIRST", False)
    k, v = _rows(5)
    assert _sync_events(gpu, monkeypatch, k, v)[:2] != ["last read", "submit"]
