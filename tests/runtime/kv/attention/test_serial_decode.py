"""The serial (CPU) kernel's decoding of quantised K/V: each word fetched once, the codec's values exactly.

serial.wgsl decodes a row one code word per loop trip (8 values of 4 bits, 4 of 8), a scale word once
per row (or block) and c4 K's per-channel scales once per group, or where a dispatch starts inside a
group. Attention over
quantised rows must then give the bits of attention over f32 rows holding the codec's decoded values
(the f32 path reads them as they are), for every windowing; the mutants (reuse a group's scales past the
group, skip decoding them where a dispatch starts mid-group, drop a row's scale word, decode a word's
second half as its first) must be caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics.exactness import Case, case_data, full_groups, run_case, stored, windows_for
from bonsai.kv.attention.driver import Attention
from bonsai.kv.format.codec import decode, encode
from bonsai.kv.format.modes import get_mode
from tests.helpers.shader_patch import patch_shader

# every unrotated quantised format pair: per-row q8/q4, blocked q4b, asymmetric q4a, per-channel c4
# (GROUP 32) and c4a (64) K with and without a V residual; 3 full c4a groups (6 c4) and 5 residual rows
MODES = ("q8", "q4", "q4b", "k8v4a", "kc4v4", "kc4v4b", "kc4av4a", "q4res")
KV_LEN = 3 * 64 + 5
# head_dim 128 too where channels share a row's scale words differently (c4: 4 channels to a row,
# c4a: 2); each such kernel takes lavapipe ~20 s to compile, so not every mode
CASES = [(mode, 64) for mode in MODES] + [("kc4v4b", 128), ("q4res", 128)]


def _attend(gpu, case: Case, mode: str, q, ks, vs, res, size: int) -> np.ndarray:
    """The serial kernel's output for `case` with rows stored as given, in `size`-position windows."""
    m = get_mode(mode)
    att = Attention(gpu, case.n_heads, case.n_kv, case.head_dim, m, variant="serial")
    bufs = [gpu.upload(a) if a.size else gpu.buffer(16) for a in (ks, vs, res)]
    v_pos_words = case.n_kv * (case.head_dim if m.v_residual else vs.shape[-1])
    windows = windows_for(mode, case.kv_len, v_pos_words, size, *bufs)
    out, state = gpu.buffer(q.nbytes), gpu.buffer(att.state_bytes(case.n_q))
    att.record(gpu.upload(q), out, state, case.pos_base, case.n_q, windows)
    return np.frombuffer(gpu.read(out), np.uint32).reshape(q.shape)


def _decoded_as_f32(case: Case, mode: str) -> tuple:
    """q, and the f32 rows (K, V) holding what the codec decodes from the mode's stored rows."""
    m = get_mode(mode)
    q, k, v = case_data(case)
    ks, vs, res = stored(k, v, mode)
    shape = (-1, case.n_kv, case.head_dim)
    res_rows = decode(res, "f32").reshape(shape)
    n_res = case.kv_len - full_groups(mode, case.kv_len)
    k_seen = np.concatenate([decode(ks, m.kf).reshape(shape), res_rows[:n_res]])
    v_seen = decode(vs, m.vf).reshape(shape)
    if m.v_residual:
        v_seen = np.concatenate([v_seen, res_rows[n_res:]])
    return q, (ks, vs, res), (encode(k_seen, "f32"), encode(v_seen, "f32"), np.zeros(0, np.float32))


@pytest.mark.parametrize(("mode", "head_dim"), CASES)
def test_quantised_rows_give_the_bits_of_f32_rows_holding_the_codecs_values(gpu, mode, head_dim):
    case = Case(9, 3, head_dim, mode, KV_LEN, 4)
    q, quantised, f32_rows = _decoded_as_f32(case, mode)
    want = _attend(gpu, case, "f32", q, *f32_rows, KV_LEN)
    for size in (KV_LEN, 100):  # 100: windows start inside groups and hold group boundaries
        got = _attend(gpu, case, mode, q, *quantised, size)
        assert np.array_equal(got, want), f"{mode} hd {head_dim} window {size}: not the codec's values"


@pytest.mark.parametrize("mode", ["kc4v4", "q4res"])
def test_dispatches_starting_inside_groups_give_the_whole_cache_bits(gpu, mode, monkeypatch):
    """Pieces of 48 positions: most dispatches start inside a group (32 or 64) and cross a boundary."""
    monkeypatch.setattr(Attention, "max_span", lambda self, n_q: 48)
    for n_q in (1, 16):
        result = run_case(gpu, Case(9, 3, 64, mode, KV_LEN, n_q), [1, 7, 100, KV_LEN], variant="serial")
        assert result.ok, result.describe()


GROUP_BUGS = {
    "a group's scales reused for the next group": ("pos == w.start || pos % GROUP == 0u", "pos == w.start"),
    "no scales decoded where a dispatch starts inside a group": ("pos == w.start || pos %", "false || pos %"),
}


@pytest.mark.parametrize("bug", GROUP_BUGS)
@pytest.mark.parametrize("mode", ["kc4v4", "q4res"])
def test_c4_scale_bugs_are_caught(gpu, monkeypatch, bug, mode):
    patch_shader(monkeypatch, gpu, "serial.wgsl", *GROUP_BUGS[bug])
    result = run_case(gpu, Case(9, 3, 64, mode, KV_LEN, 4), [100], variant="serial")
    assert not result.ok, f"{bug} went unnoticed: {result.describe()}"


ROW_BUGS = {
    "the V (scale, min) word decoded only at a dispatch's first position (q4a)": (
        "k8v4a", "            if (V_ASYM) {  // one (scale, min) word per row", "            if (V_ASYM && pos == w.start) {"),
    "a 4-bit K word's second four values decoded from its first four": (
        "q4", "let c = codes4(cw, j + 4u, K_BITS", "let c = codes4(cw, j, K_BITS"),
    "a 4-bit V word's second four values decoded from its first four": (
        "q4b", "v_vec(codes4(cw, j + 4u, V_BITS", "v_vec(codes4(cw, j, V_BITS"),
}


@pytest.mark.parametrize("bug", ROW_BUGS)
def test_row_decoding_bugs_are_caught(gpu, monkeypatch, bug):
    mode, old, new = ROW_BUGS[bug]
    patch_shader(monkeypatch, gpu, "serial.wgsl", old, new)
    case = Case(9, 3, 64, mode, 40, 4)
    q, quantised, f32_rows = _decoded_as_f32(case, mode)
    got, want = _attend(gpu, case, mode, q, *quantised, 40), _attend(gpu, case, "f32", q, *f32_rows, 40)
    assert not np.array_equal(got, want), f"{bug} went unnoticed"
