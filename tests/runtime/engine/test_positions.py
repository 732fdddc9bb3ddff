"""Continuing a conversation (rewind to the common prefix) and streaming KV windows under a VRAM budget."""

from __future__ import annotations

import numpy as np

from bonsai.engine.native import load_engine
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)


def test_continue_with_refeeds_only_the_new_suffix_and_matches_a_fresh_forward(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "qwen3", **TINY)
    engine = load_engine(path, gpu=gpu, kv="f32", window=4, progress=False)
    first = [5, 6, 7, 8, 9, 10]
    engine.forward(first)
    edited = first[:4] + [50, 51, 52]  # the turn diverges at position 4
    todo = engine.continue_with(edited)
    assert todo == [50, 51, 52] and engine.pos == 4
    continued = np.asarray(engine.forward(todo))
    engine.reset()
    fresh = np.asarray(engine.forward(edited))[4:]
    assert np.array_equal(continued.view(np.uint32), fresh.view(np.uint32))
    # a prompt fed in full is re-fed from its last token, so there are logits to sample from
    assert engine.continue_with(edited) == [52] and engine.pos == 6


def test_a_vram_budget_that_streams_windows_gives_the_same_logits(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    ids = [5, 17, 200, 3, 99, 42, 7, 150, 8, 64, 33, 12]
    resident = load_engine(path, gpu=gpu, kv="q4", window=4, progress=False)
    slot = resident.cache.slot_bytes
    streamed = load_engine(path, gpu=gpu, kv="q4", window=4, vram_budget=2 * slot, progress=False)
    want = np.concatenate([resident.forward(ids[:7]), resident.forward(ids[7:])])
    got = np.concatenate([streamed.forward(ids[:7]), streamed.forward(ids[7:])])
    assert streamed.cache.streamed_windows > 0  # windows really left the GPU and came back
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
