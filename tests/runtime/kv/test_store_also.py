"""One-position f32 rows: the store kernel's second copy (into the slot, or the q4res residual) replaces
the scatter dispatch with the same bits everywhere: logits, host master, the slot and residual buffers."""

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


def _decode(engine, fuse: bool):
    """(logits bits of every step, host master, every slot and residual buffer, dispatches)."""
    engine.reset()
    for host in engine.cache.master.layers:
        host[:] = bytes(len(host))
    engine.cache.fuse_store = fuse
    engine.model.forget_tapes()
    engine.prefill_argmax([3, 1, 4, 1, 5, 9])
    before = engine.gpu.dispatch_count
    tok, rows = 2, []
    for _ in range(STEPS):
        row = np.asarray(engine._step([tok]))[0]
        rows.append(row.view(np.uint32).copy())
        tok = int(row.argmax())
    dispatches = engine.gpu.dispatch_count - before
    c = engine.cache
    bufs = [engine.gpu.read(b) for b in c._slots.resident.values()]
    bufs += [engine.gpu.read(b) for b in (c.residual.bufs if c.residual is not None else [])]
    return np.array(rows), b"".join(bytes(h) for h in c.master.layers), bufs, dispatches


def test_the_store_kernels_second_copy_equals_the_scatter(engine):
    plain, fused = _decode(engine, False), _decode(engine, True)
    assert np.array_equal(fused[0], plain[0]) and fused[1] == plain[1] and fused[2] == plain[2]
    assert fused[3] == plain[3] - STEPS * engine.cfg.n_layers  # one dispatch fewer per layer and step


def test_a_second_copy_one_row_off_is_caught(engine, monkeypatch):
    """Mutation: the store kernel's second copy lands one row late (its destination words shifted)."""
    from bonsai.kv.store.store import Store

    plain = _decode(engine, False)
    real = Store.record

    def shifted(self, *a, also=None, **kw):
        if also is not None:
            words = engine.gpu.read(also[1].buffer, 16, also[1].offset)  # a step parameter: a slot of an arena
            also = (also[0], engine.gpu.upload(np.frombuffer(words, np.uint32) + 64))
        return real(self, *a, also=also, **kw)

    monkeypatch.setattr(Store, "record", shifted)
    engine.model.replay = False  # a read inside a step would end its tape anyway
    fused = _decode(engine, True)
    assert not (np.array_equal(fused[0], plain[0]) and fused[2] == plain[2])
