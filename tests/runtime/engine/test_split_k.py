"""A prompt step whose tiled products split K (`tiled.split_for`), through the engine with a GPU adapter's kernels on
lavapipe: the logits of whole K within the op tests' bound, the same greedy tokens, and the split really taken."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.engine.native import load_engine
from bonsai.gpu.device import Gpu
from bonsai.ops import tiled
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(n_layers=2, dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)
PROMPT = [(5 * i) % 200 + 3 for i in range(48)]
SPLIT_GROUPS = tiled.SPLIT_GROUPS


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    gpu = Gpu.create()  # a device of its own: the shared `gpu` fixture keeps the CPU kernels
    gpu.cpu_kernels = False  # the tiled matmul, which CPU adapters never take
    path = write_tiny_gguf(tmp_path_factory.mktemp("split") / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    return load_engine(path, gpu=gpu, kv="f32", window=64, max_positions=96, batch=48, progress=False)


def _run(engine, monkeypatch, split: bool) -> tuple[np.ndarray, list[int], int]:
    """(prompt logits, 6 greedy tokens after it, split_sum dispatches in the prompt's step)."""
    monkeypatch.setattr(tiled, "SPLIT_GROUPS", SPLIT_GROUPS if split else None)
    monkeypatch.setattr(tiled, "MIN_PART_CHUNKS", 1)  # the tiny model's 128 and 256 columns: 4 and 8 chunks
    sums = []
    real = engine.gpu.dispatch
    monkeypatch.setattr(engine.gpu, "dispatch", lambda k, b, g: sums.append("split_sum.wgsl" in k.name)
                        or real(k, b, g))
    engine.reset()
    logits = np.asarray(engine.forward(PROMPT)).copy()
    n_sums = sum(sums)
    monkeypatch.setattr(engine.gpu, "dispatch", real)
    engine.reset()
    tokens = engine.generate(PROMPT, max_tokens=6).tokens
    return logits, tokens, n_sums


def test_a_prompt_with_split_k_keeps_the_logits_and_tokens_of_whole_k(engine, monkeypatch):
    whole, split = _run(engine, monkeypatch, False), _run(engine, monkeypatch, True)
    assert whole[2] == 0 and split[2] == 2 * TINY["n_layers"] + 1  # wo and down in every layer, the head's logits
    assert np.allclose(split[0], whole[0], rtol=0, atol=1e-4 * np.abs(whole[0]).max())
    assert split[1] == whole[1]
