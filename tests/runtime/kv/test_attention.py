"""Windowed online-softmax attention: bit-identical to whole-cache, fp64-accurate, and the checks bite."""

from __future__ import annotations

import dataclasses

import pytest

from bonsai.kv.attention import Mutations, split
from bonsai.kv.exactness import REL_TOL, check_mutation, matrix, run_matrix
from bonsai.kv.modes import MODES

MUTATIONS = [f.name for f in dataclasses.fields(Mutations)]


@pytest.mark.parametrize("mode", ["f32", "q4", "q4r"])
def test_every_window_size_gives_the_whole_cache_bits(gpu, mode):
    # 4 GQA shapes x head_dim 64/128 x (decode at kv_len-1, 16-token causal prefill), windows 1..64
    results = run_matrix(gpu, matrix(64, modes=(mode,)), variant="serial")
    assert len(results) == 16
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)


def test_the_wide_kernel_keeps_the_invariant_too(gpu):
    # the workgroup-per-(token, head) variant real GPUs run; barriers are slow on lavapipe, so a
    # cut of window sizes here (the full sweep is the slow test and `bonsai verify attention`)
    results = run_matrix(gpu, matrix(24, modes=("f32", "q4", "q4r"), prefill=5), [1, 2, 5, 11], variant="wide")
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["serial", "wide"])
def test_every_window_size_gives_the_whole_cache_bits_long(gpu, variant):
    n = 257 if variant == "serial" else 64
    results = run_matrix(gpu, matrix(n, prefill=33), variant=variant)
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("variant", ["serial", "wide"])
def test_mutation_suite_passes_without_mutations(gpu, variant):
    assert all(r.ok for r in check_mutation(gpu, Mutations(), kv_len=12, prefill=4, variant=variant))


@pytest.mark.parametrize("name", MUTATIONS)
def test_every_injected_bug_is_caught(gpu, name):
    results = check_mutation(gpu, Mutations(**{name: True}), variant="serial")
    assert any(not r.ok for r in results), f"mutation {name} went unnoticed"


@pytest.mark.parametrize("name", MUTATIONS)
def test_every_injected_bug_is_caught_in_the_wide_kernel(gpu, name):
    results = check_mutation(gpu, Mutations(**{name: True}), kv_len=12, prefill=4, variant="wide")
    assert any(not r.ok for r in results), f"mutation {name} went unnoticed"


def test_normalising_early_is_caught_by_bits_although_a_tolerance_would_pass_it(gpu):
    results = check_mutation(gpu, Mutations(normalise_each_window=True))
    # the whole-cache run is one window (normalised once, at the end) except in grouped modes, where
    # the f32 residual is a second window: there the bug also shows against fp64
    single = [r for r in results if not MODES[r.case.mode].grouped]
    assert single and all(r.rel_err <= REL_TOL[r.case.mode] for r in single)
    assert all(r.rel_err > REL_TOL[r.case.mode] for r in results if MODES[r.case.mode].grouped)
    assert all(r.mismatched for r in results)


def test_split_covers_every_position_once():
    for n in (1, 7, 64):
        for w in range(1, n + 2):
            covered = [p for s, e in split(n, w) for p in range(s, e)]
            assert covered == list(range(n))
    assert split(10, 4, Mutations(drop_boundary=True)) == [(0, 4), (5, 8), (9, 10)]
    assert split(10, 4, Mutations(overlap=True)) == [(0, 4), (3, 8), (7, 10)]
