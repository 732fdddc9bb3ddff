"""Taped decode steps: replaying them gives the bits, host master and counts that recording gives."""

from __future__ import annotations

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.engine.native import load_engine
from bonsai.kv import KVError
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)
STEPS = 30  # from position 6: crosses windows of 8 and blocks of 4 many times


def _decode(engine, replay: bool, steps: int = STEPS):
    """Logits of every decode step from a fixed prompt, and the host master after them."""
    engine.reset()
    for host in engine.cache.master.layers:  # a blank master, so rows missing from it show
        host[:] = bytes(len(host))
    engine.model.replay = replay
    engine.model.replays = 0
    engine.prefill_argmax([3, 1, 4, 1, 5, 9])
    tok, logits = 2, []
    for _ in range(steps):
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
    monkeypatch.setattr(attention.Attention, "fold_shape", lambda self, win, n_q=1: 0)
    assert not np.array_equal(_decode(engine, replay=True)[0], recorded[0])


def test_missing_bookkeeping_in_a_replay_is_caught(engine, monkeypatch):
    """Mutation: a replay that skips the cache's staging entries leaves the host master behind."""
    recorded = _decode(engine, replay=False)
    monkeypatch.setattr(type(engine.cache), "replay_appends", lambda self, pos, n: None)
    assert _decode(engine, replay=True)[1] != recorded[1]


def _grouped_engine(gpu, tmp_path, monkeypatch, kv):
    """A grouped-K cache (groups of 64 positions for q4res, 32 for kc4v4) on the GPU kernels' variant, with
    blocks of 32: every fold dispatch of these steps is FOLD_PAD = 8 blocks wide, so no block changes the key."""
    monkeypatch.setattr(attention, "BLOCK", 32)
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv=kv, window=256, max_positions=160, progress=False)
    engine.cache.variant = "blocks"
    return engine


@pytest.fixture(params=["q4res", "kc4v4"])
def grouped(request, gpu, tmp_path, monkeypatch):
    return _grouped_engine(gpu, tmp_path, monkeypatch, request.param)


GROUPED_STEPS = 140  # from position 6: fills two K groups of q4res (four of kc4v4) mid-decode


def test_grouped_modes_replay_bit_for_bit_across_a_group_fill(grouped):
    """The residual's rows reach it by a scatter whose destination is a step parameter, and the group kernels of
    a step that fills the group read where it lies from step parameters too, so grouped modes tape every kind
    of step. Recorded: the first two steps (steps alternate two sets of step-parameter slots, each taped apart),
    the first step that fills a group, and the two after it (their windows bind the quantised rows, no longer the
    residual's alone); every other step replays, a later fill (64 steps on: the same set) the first fill's tape
    and the steps after it the tapes of the group before (all kept: `TAPES_KEPT`)."""
    recorded = _decode(grouped, replay=False, steps=GROUPED_STEPS)
    replayed = _decode(grouped, replay=True, steps=GROUPED_STEPS)
    assert np.array_equal(replayed[0], recorded[0])
    assert (6 + GROUPED_STEPS) // grouped.cache.layout.group >= 2  # a fill that replays the first fill's tape
    assert recorded[2] == 0 and replayed[2] == GROUPED_STEPS - 5
    assert replayed[1] == recorded[1] and recorded[1].count(0) < len(recorded[1])


def test_group_kernels_whose_place_is_not_a_step_parameter_are_caught(gpu, tmp_path, monkeypatch):
    """Mutation: group kernels whose parameters are cached by value bind the first group's words, and a later
    fill replaying that tape quantises its group over the first one's."""
    import bonsai.kv.residual as residual

    engine = _grouped_engine(gpu, tmp_path, monkeypatch, "q4res")
    recorded = _decode(engine, replay=False, steps=GROUPED_STEPS)
    real = residual.Residual._group_params
    monkeypatch.setattr(residual.Residual, "_group_params", lambda self, g0, one_step: real(self, g0, False))
    replayed = _decode(engine, replay=True, steps=GROUPED_STEPS)
    assert not np.array_equal(replayed[0], recorded[0]) and replayed[1] != recorded[1]


def test_a_replayed_fill_without_its_bookkeeping_is_caught(gpu, tmp_path, monkeypatch):
    """Mutation: a replayed fill that books no staging entry for the group (nor moves the residual on)."""
    import bonsai.kv.residual as residual

    engine = _grouped_engine(gpu, tmp_path, monkeypatch, "q4res")
    recorded = _decode(engine, replay=False, steps=GROUPED_STEPS)
    monkeypatch.setattr(residual.Residual, "replay_fill", lambda self, layer, g0, staging: None)
    try:
        replayed = _decode(engine, replay=True, steps=GROUPED_STEPS)
    except KVError as e:  # the master finds the group missing when the next group's rows arrive
        assert "skips positions" in str(e) or "out of order" in str(e)
    else:
        assert replayed[1] != recorded[1]


def test_a_key_blind_to_what_the_windows_bind_is_caught(gpu, tmp_path, monkeypatch):
    """Mutation: a key with the fold shapes only lets q4res's step after the first fill replay the tape of one
    whose window bound the residual's rows alone (the quantised group goes unread)."""
    from bonsai.kv.windows import Windows

    engine = _grouped_engine(gpu, tmp_path, monkeypatch, "q4res")
    recorded = _decode(engine, replay=False, steps=70)
    real = Windows.replay_key

    def shapes_only(self, pos, n, n_heads):
        key = real(self, pos, n, n_heads)
        return None if key is None else (key[0], tuple(piece[0] for piece in key[1]))

    monkeypatch.setattr(Windows, "replay_key", shapes_only)
    assert not np.array_equal(_decode(engine, replay=True, steps=70)[0], recorded[0])


def test_replaying_a_step_that_fills_a_group_is_caught(gpu, tmp_path, monkeypatch):
    """Mutation: a key that lets the group-filling step replay a plain step's tape skips quantising it
    (the next step finds the group missing from the master). Two things tell a fill from the steps before it:
    its kind, and the windows it attends once it has filled the group (no residual then); both are blinded."""
    import bonsai.kv.residual as residual
    from bonsai.kv.windows import Windows

    monkeypatch.setattr(attention, "BLOCK", 4)
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv="q4res", window=64, max_positions=160, progress=False)
    engine.cache.variant = "blocks"
    real = residual.Residual.step_kind
    monkeypatch.setattr(residual.Residual, "step_kind", lambda self, pos: real(self, pos) and "append")
    monkeypatch.setattr(Windows, "_after_appends", lambda self, kv_len: self.descriptors(0, kv_len)[1])
    with pytest.raises(KVError, match="skips positions 0..63"):  # the group never reached the master
        _decode(engine, replay=True, steps=GROUPED_STEPS)


def test_a_row_that_crosses_a_mirror_texture_row_replays_bit_for_bit(gpu, tmp_path, monkeypatch):
    """The serial (CPU) kernel reads K/V through texture mirrors refreshed a texture row at a time: with
    3 KV heads of 64 (192 words a position) and 16-position windows, V rows of some positions span two
    texture rows, and a replayed step must refresh both (the step key holds each row's first and last)."""
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", dim=192, n_heads=3, n_kv_heads=3,
                           head_dim=64, ffn_dim=256)
    runs = []
    for replay in (False, True):  # an engine each: a mirror left stale must not hold the last run's rows
        engine = load_engine(path, gpu=gpu, kv="f32", window=16, max_positions=48, progress=False)
        engine.cache.variant = "serial"
        runs.append(_decode(engine, replay=replay))
    recorded, replayed = runs
    assert replayed[2] > STEPS // 2 and np.array_equal(replayed[0], recorded[0]) and replayed[1] == recorded[1]


def test_a_key_blind_to_where_a_row_ends_is_caught(gpu, tmp_path, monkeypatch):
    """Mutation: the key with each new row's first texture row only (as it was) replays a step whose
    V row reaches into the next texture row without refreshing it."""
    from bonsai.kv.cache import KVCache

    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", dim=192, n_heads=3, n_kv_heads=3,
                           head_dim=64, ffn_dim=256)
    real = KVCache.step_key

    def first_rows_only(self, pos, n, n_heads):
        key = real(self, pos, n, n_heads)
        return None if key is None else (*key[:2], tuple(first for first, _ in key[2]), key[3])

    runs = []
    for replay in (False, True):
        engine = load_engine(path, gpu=gpu, kv="f32", window=16, max_positions=48, progress=False)
        engine.cache.variant = "serial"
        if replay:
            monkeypatch.setattr(KVCache, "step_key", first_rows_only)
        runs.append(_decode(engine, replay=replay))
    assert not np.array_equal(runs[1][0], runs[0][0])
