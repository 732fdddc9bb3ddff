"""RMSNorm, RoPE (normal / NEOX, with and without Q/K norm), SwiGLU and argmax against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import ops as host
from tests.helpers.shader_patch import patch_shader

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("rows,dim", [(1, 576), (5, 64), (3, 100)])
def test_rmsnorm_matches_reference(gpu, rows, dim):
    x = RNG.standard_normal((rows, dim)).astype(np.float32) * 3
    w = RNG.standard_normal(dim).astype(np.float32)
    got = host.rmsnorm_run(gpu, x, w, 1e-5)
    # f32 sum of <= 576 squares in another order, then a few roundings: relative 1e-5 of |x*w*scale|
    want = host.rmsnorm_reference(x, w, 1e-5)
    assert np.all(np.abs(got - want) <= 1e-5 * np.abs(want) + 1e-6)


@pytest.mark.parametrize("neox", [False, True])
@pytest.mark.parametrize("pos_base", [0, 7, 300, 1100, 8000])
def test_rope_matches_reference(gpu, neox, pos_base):
    x = RNG.standard_normal((4, 3, 64)).astype(np.float32)
    got = host.rope_run(gpu, x, pos_base, 10000.0, neox=neox, n_q=2)  # heads 0-1 via q, head 2 via k
    want = host.rope_reference(x, pos_base, 10000.0, neox=neox)
    # cos/sin from the float64 table (one f32 rounding each), then a*c - b*s: a few f32 roundings of
    # |x| at every position; an angle in f32 would err by ~pos * 2^-24 rad (test_mutations catches it)
    assert np.all(np.abs(got - want) <= 2.0 ** -21 * np.abs(x).max())


def test_the_angles_are_the_references_float64_angles_rounded_once():
    from bonsai.ops import rope
    from bonsai.reference.ops import rope_angles

    rows = np.frombuffer(rope.angle_rows(0, 3000, 64, 10000.0), np.float32).reshape(3000, 32, 2)
    cos, sin = rope_angles(np.arange(3000), 64, 10000.0, np.float32)
    assert np.array_equal(rows[..., 0].view(np.uint32), cos.view(np.uint32))
    assert np.array_equal(rows[..., 1].view(np.uint32), sin.view(np.uint32))


def test_the_engines_angle_table_grows_and_gives_any_positions_rows():
    from bonsai.ops import rope

    table = rope.AngleTable(64, 10000.0)
    assert table.rows(3, 2) == rope.angle_rows(3, 2, 64, 10000.0)
    assert table.rows(5000, 7) == rope.angle_rows(5000, 7, 64, 10000.0)  # past what it held: grown
    assert table.rows(0, 1) == rope.angle_rows(0, 1, 64, 10000.0)


def test_swiglu_matches_reference(gpu):
    x = RNG.standard_normal((3, 2 * 100)).astype(np.float32) * 4
    got = host.swiglu_run(gpu, x)
    want = host.swiglu_reference(x)
    assert np.all(np.abs(got - want) <= 1e-6 * np.abs(want) + 1e-7)


def test_argmax_equals_numpy_including_ties(gpu):
    x = RNG.standard_normal(49152).astype(np.float32)
    assert host.argmax_run(gpu, x) == int(np.argmax(x))
    x[100] = x[40000] = x.max() + 1  # tie: lowest index wins
    assert host.argmax_run(gpu, x) == 100
    assert host.argmax_run(gpu, np.full(7, -np.inf, np.float32)) == 0
    # ties inside one invocation's round of sixteen loads (indices 256 apart) and across rounds
    for first, second in ((5, 5 + 3 * 256), (5 + 15 * 256, 5 + 16 * 256), (4095, 4096)):
        y = x.copy()
        y[first] = y[second] = x.max() + 2
        assert host.argmax_run(gpu, y) == first


@pytest.mark.parametrize(("old", "new"), [
    ("    for (; i < n; i += WG) { take(", "    for (; i < min(n, i); i += WG) { take("),
    ("        take(v13, i + 13u * WG, &best, &idx);", "        take(v13, i + 12u * WG, &best, &idx);"),
], ids=["drops the tail", "misnames an index"])
def test_an_argmax_round_that_loses_or_misplaces_a_value_is_caught(gpu, monkeypatch, old, new):
    patch_shader(monkeypatch, gpu, "argmax.wgsl", old, new)
    x = RNG.standard_normal(49000).astype(np.float32)  # invocation 200's last values are in the tail
    wrong = 0
    for peak in (13 * 256 + 3, 11 * 4096 + 200 + 2 * 256):  # in a round's slot 13; in the tail
        y = x.copy()
        y[peak] = x.max() + 1
        wrong += host.argmax_run(gpu, y) != peak
    assert wrong
