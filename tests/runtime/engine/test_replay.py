"""Taped decode steps: replaying them gives the bits, host master and counts that recording gives."""

from __future__ import annotations

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.engine.native import load_engine
from tests.runtime.model.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)
STEPS = 30  # from position 6: crosses windows of 8 and blocks of 4 many times


def _decode(engine, replay: bool):
    """Logits of every decode step from a fixed prompt, and the host master after them."""
    engine.reset()
    for host in engine.cache.master.layers:  # a blank master, so rows missing from it show
        host[:] = bytes(len(host))
    engine.model.replay = replay
    engine.model.replays = 0
    engine.prefill_argmax([3, 1, 4, 1, 5, 9])
    tok, logits = 2, []
    for _ in range(STEPS):
        row = np.asarray(engine._step([tok]))[0]
        logits.append(row.view(np.uint32).copy())
        tok = int(row.argmax())
    engine.cache.sync_host()
    return np.array(logits), b"".join(bytes(h) for h in engine.cache.master.layers), engine.model.replays


@pytest.fixture(params=["serial", "blocks"])
def engine(request, gpu, tmp_path, monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 4)
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv="q4", window=8, max_positions=48, progress=False)
    engine.cache.variant = request.param
    return engine


def test_replayed_steps_equal_recorded_steps_bit_for_bit(engine):
    recorded = _decode(engine, replay=False)
    replayed = _decode(engine, replay=True)
    assert recorded[2] == 0 and replayed[2] > STEPS // 2  # most steps were replayed
    assert np.array_equal(replayed[0], recorded[0])  # every step's logits, bit for bit
    assert replayed[1] == recorded[1] and recorded[1].count(0) < len(recorded[1])  # the same host master


def test_a_stale_step_key_is_caught(gpu, tmp_path, monkeypatch):
    """Mutation: a key blind to the blocks count replays a tape that misses the newest block."""
    monkeypatch.setattr(attention, "BLOCK", 4)
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv="q4", window=8, max_positions=48, progress=False)
    engine.cache.variant = "blocks"
    recorded = _decode(engine, replay=False)
    monkeypatch.setattr(attention.Attention, "fold_shape", lambda self, win: 0)
    assert not np.array_equal(_decode(engine, replay=True)[0], recorded[0])


def test_missing_bookkeeping_in_a_replay_is_caught(engine, monkeypatch):
    """Mutation: a replay that skips the cache's staging entries leaves the host master behind."""
    recorded = _decode(engine, replay=False)
    monkeypatch.setattr(type(engine.cache), "replay_appends", lambda self, pos, n: None)
    assert _decode(engine, replay=True)[1] != recorded[1]
