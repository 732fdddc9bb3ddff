"""Host sampler (pure Python): greedy is argmax, top-k/top-p restrict the support, a seed makes draws repeatable.

Each property is a check function taking a sampler, so the same check is run on the real `sample`
and on a copy with the property's bug injected (top-k ignored, top-p ignored, ...) and must fail there.
"""

from __future__ import annotations

import dataclasses
import math
import random
from array import array
from collections import Counter

import numpy as np
import pytest

from bonsai.engine.sampler import Sampling, last_row, sample

LOGITS = [0.0, 3.0, 1.0, 2.9, -1.0]


def _support(sampler, logits, s, n=300, seed=0):
    rng = random.Random(seed)
    return {sampler(logits, s, rng) for _ in range(n)}


def greedy_takes_the_first_maximum(sampler) -> bool:
    rng = random.Random(0)
    return (sampler(LOGITS, Sampling(), rng) == 1 and sampler([1.0, 5.0, 5.0], Sampling(), rng) == 1
            and sampler([5.0, 1.0, 5.0], Sampling(), rng) == 0)


def top_k_limits_the_choices(sampler) -> bool:
    return _support(sampler, LOGITS, Sampling(temperature=5.0, top_k=2)) == {1, 3}


def top_k_breaks_ties_by_lower_id(sampler) -> bool:
    return _support(sampler, [1.0, 2.0, 2.0, 2.0], Sampling(temperature=1.0, top_k=2)) == {1, 2}


def top_p_keeps_the_smallest_prefix_reaching_p(sampler) -> bool:
    logits = [math.log(p) for p in (0.05, 0.5, 0.15, 0.3)]  # sorted: 1 (0.5), 3 (0.3), 2, 0
    return _support(sampler, logits, Sampling(temperature=1.0, top_p=0.75)) == {1, 3}  # 0.5 < 0.75 <= 0.8


def draws_follow_the_tempered_distribution(sampler, temperature=1.0) -> bool:
    probs = [0.7, 0.2, 0.1]
    logits = [math.log(p) * temperature for p in probs]  # softmax(logits / T) == probs
    n, rng = 4000, random.Random(1)
    counts = Counter(sampler(logits, Sampling(temperature=temperature), rng) for _ in range(n))
    return all(abs(counts[i] / n - p) < 0.03 for i, p in enumerate(probs))  # > 4 sigma for n = 4000


CHECKS = [greedy_takes_the_first_maximum, top_k_limits_the_choices, top_k_breaks_ties_by_lower_id,
          top_p_keeps_the_smallest_prefix_reaching_p, draws_follow_the_tempered_distribution,
          lambda f: draws_follow_the_tempered_distribution(f, temperature=0.5)]


@pytest.mark.parametrize("check", CHECKS)
def test_the_sampler_has_the_property(check):
    assert check(sample)


def _ignoring(**override):
    return lambda logits, s, rng: sample(logits, dataclasses.replace(s, **override), rng)


def _last_maximum(logits, s, rng):
    if not s.greedy:
        return sample(logits, s, rng)
    z = list(logits)
    return len(z) - 1 - z[::-1].index(max(z))


def _top_k_ties_by_higher_id(logits, s, rng):
    n = len(logits)
    return n - 1 - sample(list(logits)[::-1], s, rng)


MUTANTS = [
    (_last_maximum, greedy_takes_the_first_maximum),
    (_ignoring(top_k=0), top_k_limits_the_choices),
    (_top_k_ties_by_higher_id, top_k_breaks_ties_by_lower_id),
    (_ignoring(top_p=1.0), top_p_keeps_the_smallest_prefix_reaching_p),
    (_ignoring(temperature=1.0), CHECKS[-1]),  # temperature ignored
]


@pytest.mark.parametrize("mutant,check", MUTANTS, ids=lambda x: getattr(x, "__name__", "") or None)
def test_each_check_catches_its_injected_bug(mutant, check):
    assert not check(mutant)


def test_same_seed_same_draws_other_seed_differs():
    def draws(seed):
        s = Sampling(temperature=2.0, top_p=0.95, seed=seed)
        rng = s.rng()
        return [sample(LOGITS, s, rng) for _ in range(50)]

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)


def test_logits_may_be_a_memoryview_a_list_or_a_numpy_row():
    s = Sampling(temperature=1.5, top_k=3, seed=5)
    row = np.asarray(LOGITS, np.float32)
    forms = [LOGITS, row, memoryview(array("f", LOGITS))]
    assert len({tuple(sample(x, s, random.Random(9)) for _ in range(40)) for x in forms}) == 1


def test_last_row_of_a_2d_memoryview_and_of_an_array():
    data = array("f", range(12))
    view = memoryview(data.tobytes()).cast("f", (3, 4))
    assert last_row(view).tolist() == [8.0, 9.0, 10.0, 11.0]
    assert last_row(np.asarray(view)).tolist() == [8.0, 9.0, 10.0, 11.0]
