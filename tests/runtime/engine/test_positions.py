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


GROUPED = ("q4res", "kc4av4a")  # K quantised per group of positions once the group's last one is fed


def same_bits(a, b) -> bool:
    return np.array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


def test_a_turn_that_shares_part_of_a_quantised_group_gives_a_fresh_engines_logits(gpu, tmp_path):
    """A new conversation sharing a prefix that ends inside a group the old one filled (a tool prompt, then
    tools switched off): the group's kept rows would be their 4-bit decoding, not a fresh run's f32 rows."""
    path = write_tiny_gguf(tmp_path / "t.gguf", "qwen3", **TINY)
    rng = np.random.default_rng(1)
    old = [int(x) for x in rng.integers(3, 200, 150)]
    for mode in ("f32", *GROUPED):
        for common in (5, 40, 70):  # inside group 0 (and 1, 2): every one of them was filled by `old`
            new = old[:common] + [int(x) for x in rng.integers(3, 200, 12)]
            engine = load_engine(path, gpu=gpu, kv=mode, progress=False)
            engine.forward(old)
            continued = engine.forward(engine.continue_with(new))
            fresh = load_engine(path, gpu=gpu, kv=mode, progress=False).forward(new)
            assert same_bits(np.asarray(continued)[-1], np.asarray(fresh)[-1]), (mode, common)


def test_positions_decoded_ahead_and_forgotten_do_not_change_the_next_turn(gpu, tmp_path):
    """Greedy blocks decode past a stop token (16 steps a block); forgetting those positions must not leave
    a group quantised with their rows."""
    path = write_tiny_gguf(tmp_path / "t.gguf", "qwen3", **TINY)
    prompt = [5, 17, 200, 3, 99, 42, 7, 150, 8, 64, 33, 12, 77, 91, 23, 4, 61, 18, 120, 31]
    for mode in GROUPED:
        engine = load_engine(path, gpu=gpu, kv=mode, progress=False, resident_steps=16, blocks_ahead=1)
        seen: list[tuple[int, int]] = []

        def rewind(pos, engine=engine, seen=seen, rewind=engine.rewind):
            seen.append((engine.pos, pos))
            rewind(pos)

        engine.rewind = rewind
        # a stop string the "text" of the sixth token completes (a tiny random model repeats one token)
        first = engine.generate(prompt, max_tokens=40, stop_ids=set(), stop_strings=("STOP",),
                                decode=lambda ids: "x" * len(ids) + ("STOP" if len(ids) >= 6 else "")).tokens
        assert len(first) < 12 and seen and seen[0][0] >= 32, seen  # the forgotten steps filled group 0
        follow = [*prompt, *first, 44, 45, 46]
        continued = engine.forward(engine.continue_with(follow))
        fresh = load_engine(path, gpu=gpu, kv=mode, progress=False).forward(follow)
        assert same_bits(np.asarray(continued)[-1], np.asarray(fresh)[-1]), mode
