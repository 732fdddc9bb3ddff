"""Windowed online-softmax attention: bit-identical to whole-cache, fp64-accurate, and the checks bite."""

from __future__ import annotations

import dataclasses

import pytest

from bonsai.diagnostics.exactness import check_mutation, matrix, rel_tol, run_matrix
from bonsai.kv.attention.driver import Mutations, split
from bonsai.kv.format.modes import MODES

MUTATIONS = [f.name for f in dataclasses.fields(Mutations)]


@pytest.mark.parametrize("mode", ["f32", "q4", "q4r"])
def test_every_window_size_gives_the_whole_cache_bits(gpu, mode):
    # 4 GQA shapes x head_dim 64/128 x (decode at kv_len-1, 16-token causal prefill), windows 1..64
    results = run_matrix(gpu, matrix(64, modes=(mode,)), variant="serial")
    assert len(results) == 16
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_every_window_size_gives_the_whole_cache_bits_long(gpu):
    results = run_matrix(gpu, matrix(257, prefill=33), variant="serial")
    bad = [r.describe() for r in results if not r.ok]
    assert not bad, "\n".join(bad)


def test_mutation_suite_passes_without_mutations(gpu):
    assert all(r.ok for r in check_mutation(gpu, Mutations(), kv_len=12, prefill=4, variant="serial"))


@pytest.mark.parametrize("name", MUTATIONS)
def test_every_injected_bug_is_caught(gpu, name):
    results = check_mutation(gpu, Mutations(**{name: True}), variant="serial")
    assert any(not r.ok for r in results), f"mutation {name} went unnoticed"


def test_normalising_early_is_caught_by_bits_although_a_tolerance_would_pass_it(gpu):
    results = check_mutation(gpu, Mutations(normalise_each_window=True))
    # the whole-cache run is one window (normalised once, at the end) except in grouped modes, where
    # the f32 residual is a second window: there the bug also shows against fp64
    single = [r for r in results if not MODES[r.case.mode].grouped]
    assert single and all(r.rel_err <= rel_tol(r.case.kv_len) for r in single)
    assert all(r.rel_err > rel_tol(r.case.kv_len) for r in results if MODES[r.case.mode].grouped)
    assert all(r.mismatched for r in results)


def test_split_covers_every_position_once():
    for n in (1, 7, 64):
        for w in range(1, n + 2):
            covered = [p for s, e in split(n, w) for p in range(s, e)]
            assert covered == list(range(n))
    assert split(10, 4, Mutations(drop_boundary=True)) == [(0, 4), (5, 8), (9, 10)]
    assert split(10, 4, Mutations(overlap=True)) == [(0, 4), (3, 8), (7, 10)]
