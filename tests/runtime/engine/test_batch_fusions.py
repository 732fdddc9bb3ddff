"""A batch on the tiled matmul with its norms and RoPE folded in (Forward.fuse_batch_norm, fuse_rope): two and one
dispatches fewer per layer, RoPE's bits, the norm's logits within the tiled product's accuracy and the same tokens."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.ops import tiled

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)
PROMPT = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]


@pytest.fixture
def engine(gpu_kernel_engine, monkeypatch):
    monkeypatch.setattr(tiled, "MIN_TOKENS", 4)  # the prompt's batch takes the tiled kernel
    return gpu_kernel_engine(max_positions=48, **TINY)


def _run(engine, norm: bool, rope: bool) -> tuple[np.ndarray, list[int], int]:
    """(the prompt's logits, 6 greedy tokens after it, the prompt step's dispatches) with the batch fusions set."""
    engine.reset()
    engine.model.fuse_batch_norm, engine.model.fuse_rope = norm, rope
    engine.model.fuse_store = False  # the decode steps' store needs the fused RoPE: keep them alike in all runs
    before = engine.gpu.dispatch_count
    logits = np.asarray(engine.forward(PROMPT)).copy()
    dispatches = engine.gpu.dispatch_count - before
    tokens = [int(logits[-1].argmax())]
    for _ in range(6):
        tokens.append(int(np.asarray(engine.forward([tokens[-1]]))[-1].argmax()))
    return logits, tokens, dispatches


def test_rope_in_the_tiled_epilogue_gives_the_engine_the_bits_of_the_rope_dispatch(engine):
    plain, plain_tokens, plain_dispatches = _run(engine, False, False)
    roped, roped_tokens, roped_dispatches = _run(engine, False, True)
    assert np.array_equal(roped.view(np.uint32), plain.view(np.uint32)) and roped_tokens == plain_tokens
    assert roped_dispatches == plain_dispatches - engine.cfg.n_layers


def test_the_norms_in_the_tiled_products_take_two_dispatches_a_layer_and_keep_the_tokens(engine):
    plain, plain_tokens, plain_dispatches = _run(engine, False, True)
    fused, fused_tokens, fused_dispatches = _run(engine, True, True)
    assert fused_dispatches == plain_dispatches - 2 * engine.cfg.n_layers
    assert fused_tokens == plain_tokens
    assert not np.array_equal(fused, plain)  # another order of operations (matmul_tiled.wgsl NORM) ...
    assert np.max(np.abs(fused - plain)) <= 1e-4 * np.max(np.abs(plain))  # ... within the f32 product's reach
