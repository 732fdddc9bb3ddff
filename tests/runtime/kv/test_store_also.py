"""f32 rows within a window (one position, or a prompt's batch): the store kernel's second copy (into the slot,
or the q4res residual) replaces the scatter dispatch with the same bits everywhere: logits, host master, the
slot and residual buffers."""

from __future__ import annotations

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.engine.native import load_engine
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)
STEPS = 70  # from position 6: q4res fills its first 64-position group on the way


@pytest.fixture(params=["f32", "q4res"])
def engine(request, gpu, tmp_path, monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 4)
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv=request.param, window=64, max_positions=128, progress=False)
    engine.cache.variant = "blocks"  # the GPU kernels' variant (the serial one reads texture mirrors)
    return engine


def _fresh(engine, fuse: bool) -> None:
    engine.reset()
    for host in engine.cache.master.layers:
        host[:] = bytes(len(host))
    engine.cache.fuse_store = fuse
    engine.model.forget_tapes()


def _state(engine, rows, dispatches):
    """(logits bits, host master, every slot and residual buffer, dispatches)."""
    c = engine.cache
    bufs = [engine.gpu.read(b) for b in c._slots.resident.values()]
    bufs += [engine.gpu.read(b) for b in (c.residual.bufs if c.residual is not None else [])]
    return np.array(rows), b"".join(bytes(h) for h in c.master.layers), bufs, dispatches


def _decode(engine, fuse: bool):
    """(logits bits of every step, host master, every slot and residual buffer, dispatches)."""
    _fresh(engine, fuse)
    engine.prefill_argmax([3, 1, 4, 1, 5, 9])
    before = engine.gpu.dispatch_count
    tok, rows = 2, []
    for _ in range(STEPS):
        row = np.asarray(engine._step([tok]))[0]
        rows.append(row.view(np.uint32).copy())
        tok = int(row.argmax())
    return _state(engine, rows, engine.gpu.dispatch_count - before)


# Prompt batches of 20 and 24 tokens inside the first 64-position window, then 22 across into the second (store
# and scatter there: the rows do not lie back to back in one slot).
BATCHES = (20, 24, 22)


def _prefill(engine, fuse: bool):
    """(logits bits of every batch's every token, host master, every slot and residual buffer, dispatches)."""
    _fresh(engine, fuse)
    before = engine.gpu.dispatch_count
    rows, tok = [], 0
    for n in BATCHES:
        ids = [(tok + 7 * i) % 200 + 3 for i in range(n)]
        out = np.asarray(engine._step(ids, all_logits=True))
        rows.append(out.view(np.uint32).copy())
        tok = int(out[-1].argmax())
    return _state(engine, np.concatenate(rows), engine.gpu.dispatch_count - before)


def test_the_store_kernels_second_copy_equals_the_scatter(engine):
    plain, fused = _decode(engine, False), _decode(engine, True)
    assert np.array_equal(fused[0], plain[0]) and fused[1] == plain[1] and fused[2] == plain[2]
    assert fused[3] == plain[3] - STEPS * engine.cfg.n_layers  # one dispatch fewer per layer and step


def test_a_prompts_batches_copy_twice_where_their_rows_lie_in_one_window(engine):
    """f32: the two batches inside the first window take no scatter dispatch (one fewer per layer each); the one
    across windows keeps it. q4res batches quantise their groups from staging (`Appender._append_batch`): no
    scatter either way."""
    plain, fused = _prefill(engine, False), _prefill(engine, True)
    assert np.array_equal(fused[0], plain[0]) and fused[1] == plain[1] and fused[2] == plain[2]
    fewer = 2 * engine.cfg.n_layers if engine.cache.layout.mode.name == "f32" else 0
    assert fused[3] == plain[3] - fewer


def _second_copy_one_row_late(engine, monkeypatch) -> None:
    """Mutation: the store kernel's second copy lands one row late (its destination words shifted)."""
    from bonsai.kv.store.store import Store

    real = Store.record

    def shifted(self, *a, also=None, **kw):
        if also is not None:
            words = engine.gpu.read(also[1].buffer, 16, also[1].offset)  # a step parameter: a slot of an arena
            also = (also[0], engine.gpu.upload(np.frombuffer(words, np.uint32) + 64))
        return real(self, *a, also=also, **kw)

    monkeypatch.setattr(Store, "record", shifted)
    engine.model.replay = False  # a read inside a step would end its tape anyway


def test_a_second_copy_one_row_off_is_caught(engine, monkeypatch):
    plain = _decode(engine, False)
    _second_copy_one_row_late(engine, monkeypatch)
    fused = _decode(engine, True)
    assert not (np.array_equal(fused[0], plain[0]) and fused[2] == plain[2])


@pytest.mark.parametrize("engine", ["f32"], indirect=True)
def test_a_batchs_second_copy_one_row_off_is_caught(engine, monkeypatch):
    """The same mutation in a prompt's batches (q4res batches take no second copy)."""
    plain = _prefill(engine, False)
    _second_copy_one_row_late(engine, monkeypatch)
    fused = _prefill(engine, True)
    assert not (np.array_equal(fused[0], plain[0]) and fused[2] == plain[2])
