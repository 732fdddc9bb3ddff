"""Continuing a conversation: rewinding to the common prefix gives the logits of a fresh full forward."""

from __future__ import annotations

import numpy as np

from bonsai.engine import Engine
from tests.runtime.model.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)


def test_continue_with_refeeds_only_the_new_suffix_and_matches_a_fresh_forward(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "qwen3", **TINY)
    engine = Engine.load(path, gpu=gpu, kv="f32", window=4, progress=False)
    first = [5, 6, 7, 8, 9, 10]
    engine.forward(first)
    edited = first[:4] + [50, 51, 52]  # the turn diverges at position 4
    todo = engine.continue_with(edited)
    assert todo == [50, 51, 52] and engine.pos == 4
    continued = engine.forward(todo)
    engine.reset()
    fresh = engine.forward(edited)[4:]
    assert np.array_equal(continued.view(np.uint32), fresh.view(np.uint32))
    # a prompt fed in full is re-fed from its last token, so there are logits to sample from
    assert engine.continue_with(edited) == [52] and engine.pos == 6
