"""The split attention variant (all scores of a window at once, then the serial fold) keeps the invariant."""

from __future__ import annotations

import dataclasses

import pytest

from bonsai.kv.attention import Mutations
from bonsai.kv.exactness import check_mutation, matrix, run_matrix


def test_split_variant_windowed_equals_whole_bit_for_bit(gpu):
    results = run_matrix(gpu, matrix(24, modes=("f32", "q4", "q4r"), prefill=5), [1, 2, 5, 11], variant="split")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


def test_split_variant_every_mode(gpu):
    from bonsai.kv.modes import MODES

    results = run_matrix(gpu, matrix(40, modes=tuple(MODES), prefill=3), [1, 7, 32, 33], variant="split")
    assert results and all(r.ok for r in results), [r for r in results if not r.ok][:3]


def test_split_variant_passes_the_mutation_suite_without_mutations(gpu):
    assert all(r.ok for r in check_mutation(gpu, Mutations(), kv_len=12, prefill=4, variant="split"))


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Mutations)])
def test_every_injected_bug_is_caught_in_the_split_variant(gpu, name):
    results = check_mutation(gpu, Mutations(**{name: True}), kv_len=12, prefill=4, variant="split")
    assert any(not r.ok for r in results)
