"""q4res on the blocks variant: the f32 residual is folded in the same dispatch as the quantised window
before it, with the same bits as folding it in a dispatch (and a merge) of its own.

Blocks are shrunk to 8 positions and the residual group is 64, so windows end inside blocks, at
block ends, and the residual starts both at the cache's first position and after quantised groups.
"""

from __future__ import annotations

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.diagnostics.exactness import Case, upload_case
from bonsai.kv.attention.driver import Attention
from tests.helpers.shader_patch import patch_shader

# (kv_len, window size): the residual alone; after one group, in one window and cut; two groups + 1
CASES = [(40, 40), (70, 70), (70, 16), (70, 13), (129, 129), (129, 50)]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(attention, "BLOCK", 8)


def attend(gpu, kv_len: int, size: int, n_q: int, combines: bool) -> tuple[np.ndarray, int]:
    """q4res attention (8 query heads over 4 KV heads of 64) over windows of `size`: (output bits,
    fold dispatches recorded)."""
    case = Case(8, 4, 64, "q4res", kv_len, n_q)
    data = upload_case(gpu, case)
    att = Attention(gpu, 8, 4, 64, "q4res", variant="blocks")
    att.combines = combines  # False: the residual through its own f32 kernel, as before they were joined
    wins = data.windows(size)
    out, state = gpu.buffer(data.q.nbytes), gpu.buffer(att.state_bytes(n_q))
    folds = len(att.pieces(wins, n_q))
    att.record(data.q_buf, out, state, case.pos_base, n_q, wins)
    return np.frombuffer(gpu.read(out), np.uint32), folds


@pytest.mark.parametrize("n_q", [1, 5])
def test_the_residual_folded_with_the_window_before_it_gives_the_same_bits(gpu, n_q):
    for kv_len, size in CASES:
        joined, folds = attend(gpu, kv_len, size, n_q, combines=True)
        apart, folds_apart = attend(gpu, kv_len, size, n_q, combines=False)
        assert np.array_equal(joined, apart), (kv_len, size, n_q)
        if kv_len >= 64:  # a quantised group and the residual after it: one fold fewer
            assert folds == folds_apart - 1, (kv_len, size)


def test_pieces_join_the_residual_only_within_one_span(gpu):
    att = Attention(gpu, 8, 4, 64, "q4res", variant="blocks")
    k, r = gpu.buffer(16), gpu.buffer(16)
    main = attention.Window(k, k, 0, 64)
    res = attention.Window(r, r, 64, 128, 64, 0, 4 * 64 * 64, True)
    [joined] = att.pieces([main, res], 1)
    assert (joined.start, joined.end, joined.res, joined.res_start, joined.res_v_off) == (0, 128, r, 64, 4 * 64 * 64)
    assert not joined.residual
    att.max_span = lambda n_q: 64  # the residual starts a new span: folded apart, still by the main kernel
    first, second = att.pieces([main, res], 1)
    assert (first.end, first.res, first.res_start) == (64, None, attention.NO_RESIDUAL)
    assert (second.start, second.res_start, second.residual) == (64, 64, False)


@pytest.mark.parametrize("bug", [
    ("fn in_residual(pos: u32) -> bool { return RESIDUAL && pos >= w.w0; }",
     "fn in_residual(pos: u32) -> bool { return RESIDUAL && pos > w.w0; }"),  # first residual row read as quantised
    ("rword(w.w1 + ((pos - w.w0) * p.n_kv + g) * HD + j)", "rword(w.w1 + ((pos - w.w0 + 1u) * p.n_kv + g) * HD + j)"),
])
def test_a_wrong_residual_fold_is_caught(gpu, monkeypatch, bug):
    """Mutation: the joined fold reads the residual rows wrongly; the comparison above fails."""
    patch_shader(monkeypatch, gpu, "blocks.wgsl", *bug)
    joined, _ = attend(gpu, 70, 70, 1, combines=True)
    apart, _ = attend(gpu, 70, 70, 1, combines=False)
    assert not np.array_equal(joined, apart)
