"""A batch's block folds four tokens a workgroup (blocks.wgsl's fold_lanes) give `main`'s bits, and its bugs are caught.

fold_lanes keeps four dimensions of one (token, head) per invocation and scores four tokens from one load of a K row;
every (m, l, acc[j]) must still see fold_one's operations in fold_range's order, so a batch's output bits equal those
of `main` (one (token, head) a workgroup), which the exactness matrix compares with the whole-cache run and fp64.
"""

from __future__ import annotations

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.diagnostics.exactness import Case, matrix, run_matrix, upload_case
from bonsai.kv.attention.driver import Attention
from bonsai.kv.format.modes import MODES
from tests.helpers.shader_patch import patch_shader


def _output_bits(gpu, case: Case, window: int, lanes: bool, monkeypatch) -> np.ndarray:
    """The case's attention output bits, its cache cut into windows of `window` positions, folded by fold_lanes or main."""
    monkeypatch.setattr(attention, "LANE_FOLD", lanes)
    data = upload_case(gpu, case, seed=5)
    att = Attention(gpu, case.n_heads, case.n_kv, case.head_dim, case.mode, variant="blocks")
    out, state = gpu.buffer(data.q.nbytes), gpu.buffer(att.state_bytes(case.n_q))
    att.record(data.q_buf, out, state, case.pos_base, case.n_q, data.windows(window))
    return np.frombuffer(gpu.read(out), np.uint32)


@pytest.mark.parametrize("block", [8, 64])
def test_fold_lanes_gives_main_s_bits_in_every_mode(gpu, monkeypatch, block):
    """Every mode, head_dim 64 and 128, 9 tokens (two tiles of four and one alone), windows inside blocks."""
    monkeypatch.setattr(attention, "BLOCK", block)
    for mode in sorted(MODES):
        for head_dim in (64, 128):
            case = Case(9, 3, head_dim, mode, 150, 9)
            for window in (150, 37):
                main = _output_bits(gpu, case, window, False, monkeypatch)
                lanes = _output_bits(gpu, case, window, True, monkeypatch)
                assert main.any() and np.array_equal(main, lanes), (mode, head_dim, window)


def test_batches_take_fold_lanes_and_decode_steps_do_not(gpu, monkeypatch):
    """A batch's fold dispatch is (blocks, n_heads x its tiles of four tokens) of fold_lanes; a one-token call's is not."""
    att = Attention(gpu, 9, 3, 64, "f32", variant="blocks")
    monkeypatch.setattr(attention, "FUSE_MERGE", False)
    plain = Attention(gpu, 9, 3, 64, "f32", variant="blocks")
    kv = gpu.upload(np.zeros((100, 3, 64), np.float32))
    seen = []
    real = gpu.dispatch
    monkeypatch.setattr(gpu, "dispatch", lambda kernel, bound, shape: (seen.append((kernel, shape)), real(kernel, bound, shape)))
    for driver, n_q in [(att, 5), (att, 4), (plain, 1), (att, 1)]:  # fold_merge, main
        q, out, state = gpu.buffer(n_q * 9 * 256), gpu.buffer(n_q * 9 * 256), gpu.buffer(driver.state_bytes(n_q))
        seen.clear()
        driver.record(q, out, state, 100 - n_q, n_q, [attention.Window(kv, kv, 0, 100)])
        kernel, shape = seen[0]
        assert (kernel is driver.lanes[0]) == (n_q > 1), n_q
        assert shape == ((2, 9 * -(-n_q // 4)) if n_q > 1 else (8, 9)), (n_q, shape)  # one token: FOLD_PAD blocks


# The cases the mutants run: f32 with 8-position blocks (windows starting inside blocks: the open block's fold carried
# in), and q4res with the runtime's 64-position blocks (K's grouped codes decoded once, V's codes four to a word, the
# f32 residual); 6 tokens: a tile of four and one of two.
F32 = dict(cases=matrix(40, modes=("f32",), head_dims=(64,), prefill=6), windows=[40, 11], block=8)
# GROUPED folds the codes themselves (DECODE_BATCHES off; test_decode_window.py has the decoded windows' mutants).
GROUPED = dict(cases=matrix(150, modes=("q4res",), head_dims=(64,), prefill=6), windows=[150, 65], block=64, decode=False)


@pytest.mark.parametrize(("where", "old", "new"), [
    (F32, "add64(dot.w, 3u * HD + d, k)", "add64(dot.w, 2u * HD + d, k)"),
    (F32, "    let so = s * HD;", "    let so = 0u;"),
    (F32, "causal_end(min(tile * 4u + 3u, p.n_q - 1u))", "causal_end(tile * 4u)"),
    (F32, "state[pb + ACC_AT + j0 + 3u]);", "state[pb + ACC_AT + j0 + 2u]);"),
    (F32, "fold_one4(sc[so + k + 5u], v5, m, l, acc);", "fold_one4(sc[so + k + 4u], v5, m, l, acc);"),
    (F32, "vec4<f32>>) {\n    let m_new = max(*m, s);\n    let c_old = exp(*m - m_new);",
     "vec4<f32>>) {\n    let m_new = max(*m, s);\n    let c_old = exp(m_new - *m);"),
    (F32, "wid.y >= (p.n_q + 3u) / 4u * p.n_heads", "wid.y >= p.n_q / 4u * p.n_heads"),
    (F32, "part_put(ob + ACC_AT + j0 + 2u, acc.z);", "part_put(ob + ACC_AT + j0 + 2u, acc.y);"),
    (GROUPED, "* s.w + mn.w);", "* s.w + mn.z);"),
    (GROUPED, "codes4(k.w5, 16u, 44u)", "codes4(k.w5, 12u, 44u)"),
    (GROUPED, "dq(word, sh + 3u * V_BITS, k)", "dq(word, sh + 2u * V_BITS, k)"),
    (F32, "return bitcast<vec4<f32>>(rc[vb / 4u]);", "return bitcast<vec4<f32>>(rc[vb / 4u + 1u]);"),
], ids=["the fourth token scored with the third's query", "every token folds the first's scores",
        "the tile's scores stop at its first token's causal end", "the open block's fold carried in from a neighbour",
        "a round of eight folds a score twice", "the old state rescaled the wrong way", "the last partial tile never folded",
        "a dimension stored from its neighbour", "a grouped K min from the neighbouring channel",
        "grouped K codes from the wrong nibble", "a V code from the neighbouring nibble",
        "f32 V's four values from the next row's vector"])
def test_a_wrong_lane_fold_is_caught(gpu, monkeypatch, where, old, new):
    monkeypatch.setattr(attention, "BLOCK", where["block"])
    monkeypatch.setattr(attention, "DECODE_BATCHES", where.get("decode", True))
    assert all(r.ok for r in run_matrix(gpu, where["cases"], where["windows"], variant="blocks"))
    patch_shader(monkeypatch, gpu, "blocks.wgsl", old, new)
    results = run_matrix(gpu, where["cases"], where["windows"], variant="blocks")
    assert any(not r.ok for r in results if r.case.n_q > 1)
