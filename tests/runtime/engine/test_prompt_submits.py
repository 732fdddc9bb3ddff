"""A prompt step submits its first layer alone, then every `batch_submit_every` layers, so the GPU starts early."""

from __future__ import annotations

import numpy as np

from bonsai.engine.native import load_engine
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(n_layers=5, dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)
PROMPT = [(7 * i) % 200 + 3 for i in range(40)]


def _submits(engine, monkeypatch, first: int) -> tuple[list[int], np.ndarray]:
    """(dispatches recorded before each submit of one prompt step, its logits bits), the first submit after `first`
    layers."""
    engine.reset()
    engine.model.batch_first_submit = first
    seen: list[int] = []
    flush = engine.gpu.flush
    monkeypatch.setattr(engine.gpu, "flush", lambda: (seen.append(engine.gpu.dispatch_count), flush())[1])
    before = engine.gpu.dispatch_count
    logits = np.asarray(engine.forward(PROMPT)).view(np.uint32).copy()
    monkeypatch.undo()
    return [n - before for n in seen], logits


def _inside(counts: list[int]) -> list[int]:
    """The submits made between a step's first dispatch and its last."""
    return [n for n in counts if 0 < n < max(counts)]


def test_the_first_layer_is_submitted_alone_then_every_second(gpu, tmp_path, monkeypatch):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv="f32", batch=64, max_positions=128, progress=False)
    assert engine.model.batch_submit_every == 2 and engine.model.batch_first_submit == 1
    ramp, ramp_logits = _submits(engine, monkeypatch, 1)
    plain, plain_logits = _submits(engine, monkeypatch, 0)
    # submits inside the step (others come before it records and at its end): layers 0-1 | 2-3 | 4 without the
    # first apart; with it, layer 0 (and the embedding) alone first
    ramp_in, plain_in = _inside(ramp), _inside(plain)
    assert len(plain_in) == 2
    per_layer = (plain_in[1] - plain_in[0]) // 2
    assert per_layer > 0 and ramp_in == [plain_in[0] - per_layer, *plain_in]
    assert np.array_equal(ramp_logits, plain_logits)  # where the submits fall changes no bit
