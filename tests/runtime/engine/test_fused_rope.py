"""RoPE in the QKV matmul's epilogue (decode and prefill on the GPU kernels) gives the engine's bits and
tokens of the separate RoPE dispatch, one dispatch fewer per layer."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.shader_patch import patch_shader

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)


@pytest.fixture
def engine(gpu_kernel_engine):
    return gpu_kernel_engine(max_positions=48, **TINY)


def _run(engine, fuse: bool) -> tuple[np.ndarray, list[int], int]:
    """(bits of a 5-token prefill's logits and 8 decode steps', the greedy tokens, dispatches)."""
    engine.reset()
    engine.model.fuse_rope = fuse
    engine.model.fuse_store = False  # the store in the epilogue needs the fused RoPE (test_fused_store counts it)
    before = engine.gpu.dispatch_count
    rows = [np.asarray(engine.forward([3, 1, 4, 1, 5])).view(np.uint32).copy()]
    tokens = [int(rows[0].view(np.float32)[-1].argmax())]
    for _ in range(8):
        row = np.asarray(engine.forward([tokens[-1]]))
        rows.append(row.view(np.uint32).copy())
        tokens.append(int(row[-1].argmax()))
    return np.concatenate(rows), tokens, engine.gpu.dispatch_count - before


def test_the_fused_rope_gives_the_bits_of_the_rope_dispatch(engine):
    plain, plain_tokens, plain_dispatches = _run(engine, False)
    fused, fused_tokens, fused_dispatches = _run(engine, True)
    assert np.array_equal(fused, plain) and fused_tokens == plain_tokens
    assert fused_dispatches == plain_dispatches - 9 * engine.cfg.n_layers  # 9 steps, one RoPE dispatch a layer


def test_a_fused_rope_at_the_wrong_position_is_caught(engine, monkeypatch):
    """Mutation: the epilogue takes the next token's angles (a position off by one after the first)."""
    plain = _run(engine, False)[0]
    patch_shader(monkeypatch, engine.gpu, "matmul.wgsl", "let row = 12u + 2u * (t * (ROPE_HD / 2u) + pair);",
                 "let row = 12u + 2u * ((t + 1u) * (ROPE_HD / 2u) + pair);")
    assert not np.array_equal(_run(engine, True)[0], plain)
