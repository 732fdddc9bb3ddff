"""A batch's q4res windows decoded to f32 before the fold (decode_window.wgsl) give the codes' bits, and its bugs are caught.

f32's fold_lanes folds a decoded window's rows: the values k_elem and v_elem give (the ones q4res's fold_lanes decodes
from the codes itself) summed in the same order, so the output bits must equal those of folding the codes, which the
exactness matrix compares with the whole-cache run and fp64. That holds where the driver rounds k_elem's multiply-add
alike in both kernels: lavapipe, where these tests run. On an H100 (bench/NOTES.md, commit 41eb0e6) the block-64 case's bits
differed (NVIDIA's compiler contracts it differently per kernel), so there the decoded batches are held to the numpy
reference by the long forced decoding (`device_run.sh long`), not to the codes' bits.
"""

from __future__ import annotations

import numpy as np
import pytest

import bonsai.kv.attention.driver as attention
from bonsai.diagnostics.exactness import Case, matrix, run_matrix, upload_case
from bonsai.kv.attention.driver import Attention, Window
from tests.helpers.shader_patch import patch_shader


def _output_bits(gpu, case: Case, window: int, monkeypatch, decode: bool, lanes: bool = True) -> tuple[np.ndarray, int]:
    """The case's attention output bits (its cache cut into windows of `window` positions) and how many decode
    dispatches the call recorded."""
    monkeypatch.setattr(attention, "DECODE_BATCHES", decode)
    monkeypatch.setattr(attention, "LANE_FOLD", lanes)
    data = upload_case(gpu, case, seed=7)
    att = Attention(gpu, case.n_heads, case.n_kv, case.head_dim, case.mode, variant="blocks")
    out, state = gpu.buffer(data.q.nbytes), gpu.buffer(att.state_bytes(case.n_q))
    decodes = []
    real = gpu.dispatch
    monkeypatch.setattr(gpu, "dispatch", lambda k, bound, shape: (decodes.append(k is att.decode), real(k, bound, shape)))
    att.record(data.q_buf, out, state, case.pos_base, case.n_q, data.windows(window))
    monkeypatch.setattr(gpu, "dispatch", real)
    return np.frombuffer(gpu.read(out), np.uint32), sum(decodes)


@pytest.mark.parametrize("block", [8, 64])
def test_a_decoded_window_gives_the_codes_bits(gpu, monkeypatch, block):
    """q4res, head_dim 64 and 128, 9 tokens after 141 positions of context: windows that end in the residual group,
    inside blocks and inside groups; decoded, folded from the codes by fold_lanes, and by `main` one token a workgroup."""
    monkeypatch.setattr(attention, "BLOCK", block)
    for head_dim in (64, 128):
        case = Case(9, 3, head_dim, "q4res", 150, 9)
        for window in (150, 37):
            decoded, n = _output_bits(gpu, case, window, monkeypatch, decode=True)
            codes, none = _output_bits(gpu, case, window, monkeypatch, decode=False)
            main, _ = _output_bits(gpu, case, window, monkeypatch, decode=True, lanes=False)
            assert n >= 1 and none == 0, (n, none)
            assert decoded.any() and np.array_equal(decoded, codes) and np.array_equal(decoded, main), (head_dim, window)


def test_only_batches_of_a_combining_mode_decode(gpu, monkeypatch):
    """Decode steps (one token) fold the codes; f32 has no decode kernel; a window all in the residual needs none."""
    assert Attention(gpu, 9, 3, 64, "f32", variant="blocks").decode is None
    assert Attention(gpu, 9, 3, 64, "q4res", variant="serial").decode is None
    att = Attention(gpu, 9, 3, 64, "q4res", variant="blocks")
    kv = gpu.buffer(64)
    quantised = Window(kv, kv, 0, 100, res=kv, res_start=64)
    assert att._decodes(quantised, 5) and not att._decodes(quantised, 1)
    assert not att._decodes(Window(kv, kv, 64, 100, buf_base=64, res=kv, res_start=64), 5)
    monkeypatch.setattr(attention, "DECODE_BATCHES", False)
    assert not att._decodes(quantised, 5)


# q4res with the runtime's 64-position blocks, 6 query tokens (a tile of four and one of two) after 144 positions:
# windows of 150 (the residual group folded with the quantised blocks) and 65 (windows ending inside groups).
GROUPED = matrix(150, modes=("q4res",), head_dims=(64,), prefill=6)


@pytest.mark.parametrize(("old", "new"), [
    ("rows[n_rows * (HD / 4u) + i] = v;", "rows[i] = v;"),
    ("let kb = ((pos - w.w0) * p.n_kv + g) * HD + d;", "let kb = ((pos - w.w0) * p.n_kv) * HD + d;"),
    ("((pos - pos % GROUP - w.buf_base) * p.n_kv + g)", "((pos - w.buf_base) * p.n_kv + g)"),
    ("v_elem(vb, d + 3u)", "v_elem(vb, d + 2u)"),
    ("if (pos >= w.w0) {", "if (pos > w.w0) {"),
], ids=["V rows written over K's", "residual rows copied from KV head 0", "grouped K scales from the row, not its group",
        "a V value from the neighbouring dimension", "the residual's first row decoded from codes"])
def test_a_wrong_decode_is_caught(gpu, monkeypatch, old, new):
    assert all(r.ok for r in run_matrix(gpu, GROUPED, [150, 65], variant="blocks"))
    patch_shader(monkeypatch, gpu, "decode_window.wgsl", old, new)
    results = run_matrix(gpu, GROUPED, [150, 65], variant="blocks")
    assert any(not r.ok for r in results if r.case.n_q > 1)
