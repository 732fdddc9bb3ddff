"""A prompt step that reads its first layers' rows ahead (`GpuModel.read_ahead`) gives the logits, host master
and decoded tokens of one read at its end."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.engine.native import load_engine
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(n_layers=4, dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)
PROMPT = [(7 * i) % 200 + 3 for i in range(90)]  # two batches of 48: the second crosses into the second window


@pytest.fixture(params=["f32", "q4res"])
def engine(request, gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv=request.param, window=64, max_positions=160, batch=48, progress=False)
    engine.model.batch_submit_every = 1  # a submit, and with read_ahead a read, before every layer after the first
    return engine


def _run(engine, ahead: bool, monkeypatch) -> tuple:
    """(logits bits of the prompt, host master, 8 greedy tokens after it, reads started by read_queued or
    read_gathered)."""
    engine.reset()
    for host in engine.cache.master.layers:
        host[:] = bytes(len(host))
    engine.model.read_ahead = ahead
    reads: list[int] = []
    queued, gathered = engine.gpu.read_queued, engine.gpu.read_gathered
    monkeypatch.setattr(engine.gpu, "read_queued", lambda buf, n, off=0: reads.append(n) or queued(buf, n, off))
    monkeypatch.setattr(engine.gpu, "read_gathered", lambda buf, spans: reads.append(len(spans)) or gathered(buf, spans))
    logits = np.asarray(engine.forward(PROMPT)).view(np.uint32).copy()
    master = b"".join(bytes(h) for h in engine.cache.master.layers)
    monkeypatch.undo()
    engine.reset()
    tokens = engine.generate(PROMPT, max_tokens=8).tokens
    return logits, master, tokens, len(reads)


def test_a_prompt_read_ahead_equals_one_read(engine, monkeypatch):
    one, ahead = _run(engine, False, monkeypatch), _run(engine, True, monkeypatch)
    assert np.array_equal(ahead[0], one[0]) and ahead[1] == one[1] and ahead[2] == one[2]
    # two batches: a read before layers 1, 2, 3, and the sync's read of the rest; without reads ahead, the sync's
    # own read goes through read_gathered only where the second batch's rows of the group it completes stay on
    # the GPU (q4res: `Entry.skip`)
    gathered_sync = int(engine.cache.layout.mode.v_residual)
    assert one[3] == gathered_sync and ahead[3] == 2 * TINY["n_layers"]


def test_the_default_reads_ahead_only_on_a_gpu_of_its_own(engine):
    assert engine.model.read_ahead == (not engine.gpu.is_cpu)
