"""RMSNorm folded into the matmul that follows it (matmul.wgsl NORM, decode steps) gives the bits of the two
dispatches."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.ops import matmul as mm
from tests.helpers.shader_patch import patch_shader

# dim 320: each of the 64 invocations sums five squares, one round of four written-out loads and a tail
TINY = dict(dim=320, n_heads=5, n_kv_heads=1, head_dim=64, ffn_dim=256)


@pytest.fixture
def engine(gpu_kernel_engine):
    return gpu_kernel_engine(**TINY)


def _logits(engine, fuse: bool) -> np.ndarray:
    """Bits of the logits of a 5-token prefill and 6 decode steps."""
    engine.reset()
    engine.model.fuse_norm = fuse
    rows = [np.asarray(engine.forward([3, 1, 4, 1, 5])).view(np.uint32).copy()]
    tok = int(np.asarray(rows[0]).view(np.float32)[-1].argmax())
    for _ in range(6):
        row = np.asarray(engine.forward([tok]))
        rows.append(row.view(np.uint32).copy())
        tok = int(row[-1].argmax())
    return np.concatenate(rows)


def test_the_fused_norm_gives_the_bits_of_the_norm_dispatch(engine):
    before = engine.gpu.dispatch_count
    plain = _logits(engine, False)
    plain_dispatches = engine.gpu.dispatch_count - before
    before = engine.gpu.dispatch_count
    fused = _logits(engine, True)
    assert np.array_equal(fused, plain)
    # decode steps fuse (2 norms a layer and the output norm); the prefill batch keeps its norm dispatches
    assert engine.gpu.dispatch_count - before == plain_dispatches - 6 * (2 * engine.cfg.n_layers + 1)


def test_a_norm_kernel_that_sums_in_another_order_is_caught(engine, monkeypatch):
    """Mutation: rmsnorm.wgsl with 32 invocations (another order of the x^2 sums) while the matmul still
    fuses with 64: the fused bits are no longer the norm kernel's, and the comparison sees it."""
    from bonsai.ops import rmsnorm

    fused = _logits(engine, True)
    monkeypatch.setattr(rmsnorm, "WG", 32)
    monkeypatch.setattr(mm, "fuses_norm", lambda m: m.tex is None)
    assert not np.array_equal(_logits(engine, False), fused)


def test_a_fused_sum_that_loses_a_square_of_its_round_is_caught(engine, monkeypatch):
    """Mutation: the matmul's round of four loads counts one square twice and drops another."""
    plain = _logits(engine, False)
    patch_shader(monkeypatch, engine.gpu, "matmul.wgsl", "                    s += v2 * v2;", "                    s += v1 * v1;")
    assert not np.array_equal(_logits(engine, True), plain)


def test_a_batch_projects_its_last_row_with_the_output_norm_fused_and_the_same_bits(engine):
    """A prefill that wants only the last row's logits normalises that row inside the output matmul."""
    rows, counts = {}, {}
    for fuse in (False, True):
        engine.reset()
        engine.model.fuse_norm = fuse
        before = engine.gpu.dispatch_count
        rows[fuse] = np.asarray(engine._step([3, 1, 4, 1, 5])).view(np.uint32).copy()
        counts[fuse] = engine.gpu.dispatch_count - before
    assert np.array_equal(rows[True], rows[False])
    assert counts[True] == counts[False] - 1  # the output norm's dispatch (batches keep the layers' norms)
