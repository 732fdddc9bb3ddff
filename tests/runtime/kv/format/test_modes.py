"""Every KV mode: store and group kernels match the numpy formats bit for bit; windows stay exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonsai.diagnostics.exactness import full_groups, matrix, run_matrix
from bonsai.kv.format import codec as formats
from bonsai.kv.format.codec import GROUP, store_rows
from bonsai.kv.format.modes import MODES
from bonsai.kv.store.store import GroupStore, Store
from tests.helpers.shader_patch import patch_shader

NEW_MODES = [m for m in MODES if m not in ("f32", "q4", "q4r")]


def edge_rows(hd: int) -> np.ndarray:
    """Rows on the rounding edges of 4- and 8-bit scales and codes."""
    rng = np.random.default_rng(7)
    rows = [np.zeros(hd, np.float32), np.full(hd, -0.0, np.float32)]
    s = np.float32(0.25)
    rows.append(np.resize(np.array([7, 0.5, 1.5, 2.5, -0.5, -2.5, 6.5, -7, 126.5, -127, 127, 3.5], np.float32) * s, hd))
    for qmax in (7, 127):  # amax / qmax exactly half-way between two f16 values
        for h in (0x3C00, 0x3C01, 0x0001, 0x7BFE):
            lo, hi = np.array([h, h + 1], np.uint16).view(np.float16).astype(np.float64)
            r = np.linspace(-1, 1, hd).astype(np.float32) * np.float32(qmax * (lo + hi) / 2)
            r[0] = np.float32(qmax * (lo + hi) / 2)
            rows.append(r)
    for amax in (1e-6, 3e-8, 1e-30, 1e-40):
        rows.append(rng.uniform(-1, 1, hd).astype(np.float32) * np.float32(amax))
    half = rng.standard_normal(hd).astype(np.float32)
    half[: hd // 2] *= 1e-4  # one 32-block tiny, the other large
    rows.append(half)
    return np.stack(rows)


def gpu_store(gpu, mode, k, v):
    n, n_kv, hd = k.shape
    st = Store(gpu, n_kv, hd, MODES[mode])
    kw, vw = st.k_words, st.v_words
    dst, flags = gpu.buffer((n * n_kv * (kw + vw) + 8) * 4), gpu.buffer((2 * n * n_kv + 3) * 4)
    st.record(gpu.upload(k), gpu.upload(v), n, dst, 8, flags, 3)
    d = np.frombuffer(gpu.read(dst), np.uint32)[8:]
    f = np.frombuffer(gpu.read(flags), np.uint32)[3: 3 + 2 * n * n_kv]
    return d[: n * n_kv * kw].reshape(n, n_kv, kw), d[n * n_kv * kw: n * n_kv * (kw + vw)].reshape(n, n_kv, vw), f


@pytest.mark.parametrize("hd", [64, 128])
def test_store_kernel_matches_the_formats_for_every_mode(gpu, hd):
    rng = np.random.default_rng(hd)
    x = np.concatenate([edge_rows(hd), (rng.standard_normal((30, hd)) * rng.uniform(1e-3, 50, (30, 1)))])
    x = x.astype(np.float32)[: len(x) // 2 * 2].reshape(-1, 2, hd)
    for mode in MODES:
        # keep every row within the formats' f16 scale (its sqrt(hd) growth under rotation; the f16 min)
        m = MODES[mode]
        lim = 1e4 if m.rotate_k else 6e4 if m.kf.asym or m.vf.asym else 4e5
        xm = np.clip(x, -lim, lim)
        k, v, flags = gpu_store(gpu, mode, xm, xm[::-1].copy())
        assert not flags.any(), mode
        want_k, want_v = store_rows(MODES[mode], xm, xm[::-1].copy())
        assert np.array_equal(k, want_k), mode
        assert np.array_equal(v, want_v), mode


def flagged_rows(hd: int) -> tuple[np.ndarray, list[tuple[bool, bool]]]:
    """Rows [6, 2, hd]: ordinary ones around a NaN, an inf and a 1e30 (head 1 of positions 1, 3, 5), and
    per position (non-finite, huge) for head 1."""
    x = np.random.default_rng(hd).standard_normal((6, 2, hd)).astype(np.float32)
    x[1, 1, 7], x[3, 1, hd - 1], x[5, 1, 0] = np.nan, np.inf, 1e30
    return x, [(False, False), (True, False), (False, False), (True, False), (False, False), (False, True)]


def expected_flags(st: Store, rows: list[tuple[bool, bool]]) -> np.ndarray:
    """The store kernel's flags for flagged_rows: 1 non-finite, else 2 where a scale (or the limit of rows
    kept in f32 to quantise later) cannot hold the value, else 0; K rows then V rows."""
    out = []
    for fmt, limit in ((st.mode.k_store, st.k_limit), (st.mode.v_store, st.v_limit)):
        huge = 2 if fmt.bits != 32 or limit > 0 else 0
        out += [0 if h == 0 else (1 if bad else huge if big else 0) for bad, big in rows for h in (0, 1)]
    return np.array(out, np.uint32)


@pytest.mark.parametrize("hd", [64, 128])
def test_store_kernel_flags_non_finite_and_unscalable_rows_in_every_mode(gpu, hd):
    x, rows = flagged_rows(hd)
    for mode in MODES:
        st = Store(gpu, 2, hd, MODES[mode])
        assert np.array_equal(gpu_store(gpu, mode, x, x)[2], expected_flags(st, rows)), mode


@pytest.mark.parametrize(("old", "new"), [
    ("        flags[p.flag_base + r] = row_bad;\n    }\n}", "        flags[p.flag_base + r] = 0u;\n    }\n}"),
    ("    workgroupBarrier();\n    if (li == 0u) { row_params(", "    if (li == 0u) { row_params("),
    ("        var lo = xs[0];\n        var hi = xs[0];\n        for (var j = 1u;", "        var lo = xs[1];\n        var hi = xs[0];\n        for (var j = 1u;"),
    ("    if (rotate && bad == 0u) {", "    if (false) {"),
], ids=["quantised rows never flagged", "scales taken before the row is staged", "the row's first value left out of its min",
        "q4r's K rows stored unrotated"])
def test_a_broken_row_kernel_is_caught(gpu, monkeypatch, old, new):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((8, 2, 64)) * rng.uniform(0.1, 9, (8, 2, 1))).astype(np.float32)
    x[:, :, 0] = -np.abs(x).max(axis=2) - 1  # each row's first value its min
    bad, rows = flagged_rows(64)
    patch_shader(monkeypatch, gpu, "store.wgsl", old, new)
    caught = False
    for mode in ("q4", "q4r", "q4res", "kc4av4a", "k8v4"):
        k, v, _ = gpu_store(gpu, mode, x, x[::-1].copy())
        want_k, want_v = store_rows(MODES[mode], x, x[::-1].copy())
        flags = gpu_store(gpu, mode, bad, bad)[2]
        caught |= not (np.array_equal(k, want_k) and np.array_equal(v, want_v))
        caught |= not np.array_equal(flags, expected_flags(Store(gpu, 2, 64, MODES[mode]), rows))
    assert caught


def group_inputs(hd: int, G: int) -> np.ndarray:
    """Two groups of f32 K rows [2G, 3, hd] with a zero, a constant, a subnormal and an offset channel."""
    rng = np.random.default_rng(hd + 1)
    x = (rng.standard_normal((2 * G, 3, hd)) * rng.uniform(1e-3, 50, (1, 3, hd))).astype(np.float32)
    x[:, 0, 5] = 0.0  # a zero channel
    x[:, 0, 6] = 3.0  # a constant channel (asymmetric: scale 0, min carries it)
    x[:, 1, 9] = np.float32(1e-40)  # a subnormal channel
    x[:, 1, 10] += 40  # an offset channel (where the min pays off)
    x[:, 2, :8] = np.float32(0.25) * np.resize(np.array([7, 0.5, 1.5, -2.5, 3.5, -6.5], np.float32), (2 * G, 1))
    return x


def group_kernel_output(gpu, x: np.ndarray, fmt: str, one_dispatch: bool = False) -> np.ndarray:
    """group.wgsl's rows for the two groups of `x`, each written by its own dispatch (or both by one); the rows it
    wrote into staging must be the same words."""
    G, hd = formats.FORMATS[fmt].group, x.shape[2]
    gs = GroupStore(gpu, 3, hd, fmt=fmt)
    rw = gs.row_words
    src = gpu.upload(np.concatenate([np.zeros(5, np.float32), x.ravel()]))
    dst, staged = gpu.buffer((2 * G * 3 * rw + 4) * 4), gpu.buffer((2 * G * 3 * rw + 7) * 4)
    if one_dispatch:
        gs.record(src, 5, dst, 4, staged, 7, groups=2)
    else:
        gs.record(src, 5, dst, 4, staged, 7)
        gs.record(src, 5 + G * 3 * hd, dst, 4 + G * 3 * rw, staged, 7 + G * 3 * rw)
    rows = np.frombuffer(gpu.read(dst), np.uint32)[4: 4 + 2 * G * 3 * rw].reshape(2 * G, 3, rw)
    assert np.array_equal(np.frombuffer(gpu.read(staged), np.uint32)[7: 7 + rows.size].reshape(rows.shape), rows)
    return rows


@pytest.mark.parametrize("fmt", ["c4", "c4a"])
@pytest.mark.parametrize("hd", [64, 128])
def test_group_kernel_matches_the_format_bit_for_bit(gpu, hd, fmt):
    x = group_inputs(hd, formats.FORMATS[fmt].group)
    got = group_kernel_output(gpu, x, fmt)
    want = formats.encode(x, fmt)
    assert np.array_equal(got, want)
    assert np.array_equal(group_kernel_output(gpu, x, fmt, one_dispatch=True), want)  # a batch's groups at once
    # the oracle can tell per-channel from per-row scales
    assert not np.array_equal(got[:, :, : hd // 8], formats.encode(x, "q4")[..., : hd // 8])
    span = (x.max(axis=0) - x.min(axis=0)).max() if fmt == "c4a" else 2 * np.abs(x).max(axis=0).max()
    assert np.abs(formats.decode(want, fmt) - x).max() <= span / 28 * 1.01


@pytest.mark.parametrize(("fmt", "old", "new"), [
    ("c4a", "let at = ((t0 + d / CPR) * N_KV + g)", "let at = ((d / CPR) * N_KV + g)"),
    ("c4", "fn x_at(g: u32, t: u32, d: u32) -> f32 { return bitcast<f32>(src[p.src_word + ((t0 + t) * N_KV",
     "fn x_at(g: u32, t: u32, d: u32) -> f32 { return bitcast<f32>(src[p.src_word + ((t) * N_KV"),
], ids=["every group's scales in the first group's rows", "every group read from the first group's rows"])
def test_a_group_kernel_that_loses_track_of_its_group_is_caught(gpu, monkeypatch, fmt, old, new):
    x = group_inputs(64, formats.FORMATS[fmt].group)
    patch_shader(monkeypatch, gpu, "group.wgsl", old, new)
    assert not np.array_equal(group_kernel_output(gpu, x, fmt, one_dispatch=True), formats.encode(x, fmt))


@pytest.mark.parametrize(("fmt", "old", "new"), [
    ("c4a", "    workgroupBarrier();\n    for (var wd", "    for (var wd"),
    ("c4a", "lo = min(lo, x6); hi = max(hi, x6); lo = min(lo, x7);", "lo = min(lo, x6); hi = max(hi, x6); lo = min(lo, x6);"),
    ("c4", "amax_bits = max(amax_bits, bitcast<u32>(x_at(g, t, d))", "amax_bits = max(amax_bits, bitcast<u32>(x_at(g, t / 2u, d))"),
    ("c4a", "(code(x3, b + 3u) << 12u)", "(code(x3, b + 2u) << 12u)"),
    ("c4", "put_k(at + (d % CPR) / 2u, sb[d] | (sb[d + 1u] << 16u));", "put_k(at + (d % CPR) / 2u, sb[d] | (sb[d] << 16u));"),
], ids=["codes packed before the scales are shared", "a position left out of the range",
        "half the positions in the largest magnitude", "a value coded with its neighbour's scale",
        "a scale word with one channel's scale twice"])
def test_a_broken_group_kernel_is_caught(gpu, monkeypatch, fmt, old, new):
    x = group_inputs(64, formats.FORMATS[fmt].group)
    patch_shader(monkeypatch, gpu, "group.wgsl", old, new)
    assert not np.array_equal(group_kernel_output(gpu, x, fmt), formats.encode(x, fmt))


def v_group_inputs(hd: int) -> np.ndarray:
    """Two c4a groups of f32 V rows [2G, 3, hd]: the rounding-edge rows, then rows of many scales, with a row's
    min in its first value, its last value and its max in the middle (each in another part of the row)."""
    G = formats.FORMATS["c4a"].group
    rng = np.random.default_rng(hd + 2)
    v = (rng.standard_normal((2 * G, 3, hd)) * rng.uniform(1e-3, 50, (2 * G, 3, 1))).astype(np.float32)
    edge = np.clip(edge_rows(hd), -6e4, 6e4)  # within q4a's f16 min
    v.reshape(-1, hd)[: len(edge)] = edge
    v[70, 0, 0], v[71, 1, hd - 1], v[72, 2, hd // 2] = -300.0, -300.0, 300.0
    return v


def group_rows_output(gpu, k: np.ndarray, v: np.ndarray, one_dispatch: bool = False,
                      staged_too: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """group.wgsl's K rows (c4a) and V rows (q4a) for the two groups of `k` and `v` (a V residual's groups), each
    group by its own dispatch (or both by one), as they lie in the slot; staged_too: the rows written into staging
    (a K block, then a V block, as a batch's group entry) must be the same words (else: returned from staging)."""
    G, hd = formats.FORMATS["c4a"].group, k.shape[2]
    gs = GroupStore(gpu, 3, hd, fmt="c4a", v_rows="q4a")
    rw, vw, n = gs.row_words, formats.FORMATS["q4a"].row_words(hd), 2 * G * 3
    src = gpu.upload(np.concatenate([np.zeros(5, np.float32), k.ravel(), v.ravel()]))
    dst, staged = gpu.buffer((n * (rw + vw) + 4) * 4), gpu.buffer((n * (rw + vw) + 9) * 4)
    v_src, v_dst = 5 + k.size, 4 + n * rw
    if one_dispatch:
        gs.record(src, 5, dst, 4, staged, 9, groups=2, v_src=v_src, v_dst=v_dst, staged_v=9 + n * rw)
    else:
        for i in range(2):
            at = i * G * 3
            gs.record(src, 5 + at * hd, dst, 4 + at * rw, staged, 9 + at * rw, v_src=v_src + at * hd,
                      v_dst=v_dst + at * vw, staged_v=9 + n * rw + at * vw)
    d = np.frombuffer(gpu.read(dst), np.uint32)[4: 4 + n * (rw + vw)]
    st = np.frombuffer(gpu.read(staged), np.uint32)[9: 9 + n * (rw + vw)]
    if staged_too:
        assert np.array_equal(st, d)
    else:
        d = st
    return d[: n * rw].reshape(2 * G, 3, rw), d[n * rw:].reshape(2 * G, 3, vw)


@pytest.mark.parametrize("hd", [64, 128])
def test_group_kernel_quantises_a_v_residuals_rows_beside_its_k_group(gpu, hd):
    k, v = group_inputs(hd, formats.FORMATS["c4a"].group), v_group_inputs(hd)
    want_k, want_v = formats.encode(k, "c4a"), formats.encode(v, "q4a")
    for one_dispatch in (False, True):
        got_k, got_v = group_rows_output(gpu, k, v, one_dispatch)
        assert np.array_equal(got_k, want_k)
        assert np.array_equal(got_v, want_v)


def test_group_kernel_zeroes_v_rows_it_cannot_quantise(gpu):
    # as store.wgsl's rows did: a non-finite value, or a min beyond f16, leaves the row's scale 0 (and its codes 0);
    # the f32 store kernel flagged those rows when they were appended
    k, v = group_inputs(64, formats.FORMATS["c4a"].group), v_group_inputs(64)
    bad = [(3, 1), (5, 2), (9, 0)]
    v[3, 1, 7], v[5, 2, 63], v[9, 0, 0] = np.nan, np.inf, -1e30
    got_v = group_rows_output(gpu, k, v)[1]
    fine = v.copy()
    for t, g in bad:
        fine[t, g] = 0.0
    want_v = formats.encode(fine, "q4a")
    assert not want_v[3, 1].any() and np.array_equal(got_v, want_v)


@pytest.mark.parametrize(("old", "new"), [
    ("    for (var q = 1u; q < V_PARTS; q = q + 1u) {", "    for (var q = 1u; q < V_PARTS - 1u; q = q + 1u) {"),
    ("    for (var q = 1u; q < K_PARTS; q = q + 1u) {", "    for (var q = 1u; q < K_PARTS - 1u; q = q + 1u) {"),
    ("    part_bad[i] = select(0u, 1u, mag >= 0x7f800000u);", "    part_bad[i] = 0u;"),
    ("        let sm = sb[t];", "        let sm = sb[c];"),
    ("g) * V_ROW_WORDS + HD / 8u, sb[t]); }", "g) * V_ROW_WORDS + HD / 8u - 1u, sb[t]); }"),
    ("    if (V_ROWS && wid.z == 1u) {", "    if (V_ROWS && wid.z == 2u) {"),
    ("    put_staged(ps.k + at, word);", "    put_staged(ps.k + at + 1u, word);"),
    ("    put_staged(ps.v + at, word);", "    put_staged(ps.k + at, word);"),
], ids=["a row's last part left out of its range", "a channel's last part left out of its range",
        "a non-finite V value missed", "a V row coded with another row's scale", "a V row's scale word one word early",
        "V workgroups quantising K again", "K rows staged one word late", "V rows staged over K's"])
def test_a_broken_v_residual_group_kernel_is_caught(gpu, monkeypatch, old, new):
    k, v = group_inputs(64, formats.FORMATS["c4a"].group), v_group_inputs(64)
    v[3, 1, 7] = np.nan
    patch_shader(monkeypatch, gpu, "group.wgsl", old, new)
    got_k, got_v = group_rows_output(gpu, k, v, one_dispatch=True, staged_too="put_staged" not in old)
    v[3, 1] = 0.0
    assert not (np.array_equal(got_k, formats.encode(k, "c4a")) and np.array_equal(got_v, formats.encode(v, "q4a")))


def test_group_kernel_quantises_v_rows_to_q4a_only(gpu):
    with pytest.raises(ValueError, match="q4a only"):
        GroupStore(gpu, 3, 64, fmt="c4a", v_rows="q4")


def test_c4_scales_travel_with_their_group():
    x = np.random.default_rng(3).standard_normal((GROUP, 2, 64)).astype(np.float32)
    rows = formats.encode(x, "c4")
    raw, scale = formats.quantise_group(x)
    # row i carries the scales of channels 2i, 2i+1 (hd 64: one word)
    i = 5
    h = rows[i, 1, 8]
    assert np.array([h & 0xFFFF, h >> 16], np.uint16).view(np.float16).tolist() == scale[1, 2 * i: 2 * i + 2].tolist()


def test_every_mode_keeps_windowed_equal_to_whole_cache(gpu):
    # kv_len 40 crosses a group boundary: grouped modes fold 32 quantised positions + an f32 residual
    results = run_matrix(gpu, matrix(40, modes=tuple(NEW_MODES), head_dims=(64,), prefill=5),
                         [1, 3, 7, 31, 32, 33], variant="serial")
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)
    assert full_groups("kc4v4", 40) == 32 and full_groups("k8v4", 40) == 40


@pytest.mark.parametrize("mode,hd", [("kc4v4b", 128), ("q4res", 64)])
def test_grouped_mode_every_window_size(gpu, mode, hd):
    # 70 positions: 64 quantised (two c4 groups, one c4a group) and an f32 residual (q4res: K and V)
    results = run_matrix(gpu, matrix(70, modes=(mode,), head_dims=(hd,), prefill=16), variant="serial")
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)


def test_bits_per_element_from_the_row_layout():
    assert MODES["q4"].bits_per_element(64) == 4.5
    assert MODES["kc4v4b"].bits_per_element(64) == 4.5
    assert MODES["kc4v4b"].bits_per_element(128) == 4.5
    assert MODES["q8"].bits_per_element(64) == 8.5
    assert MODES["kc4av4a"].bits_per_element(64) == 4.5
    assert MODES["kc4av4a"].bits_per_element(128) == 4.375
    assert MODES["f32"].bits_per_element(64) == 32


def test_the_light_mode_names_are_the_mode_table():
    from bonsai.kv import MODE_NAMES

    assert MODE_NAMES == tuple(MODES)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.sampled_from(sorted(MODES)), n=st.integers(1, 9), n_kv=st.integers(1, 3), hd=st.sampled_from([64, 128]),
       log_scale=st.floats(-6, 4), seed=st.integers(0, 2**16))
def test_store_kernel_is_the_codec_on_random_rows(gpu, mode, n, n_kv, hd, log_scale, seed):
    """The one codec, property-tested: the store kernel writes exactly `codec.store_rows` (bit for bit)."""
    rng = np.random.default_rng(seed)
    k = (rng.standard_normal((n, n_kv, hd)) * 10.0 ** log_scale).astype(np.float32)
    v = (rng.standard_normal((n, n_kv, hd)) * 10.0 ** log_scale).astype(np.float32)
    got_k, got_v, flags = gpu_store(gpu, mode, k, v)
    want_k, want_v = store_rows(MODES[mode], k, v)
    assert not flags.any()
    assert np.array_equal(got_k, want_k) and np.array_equal(got_v, want_v)
