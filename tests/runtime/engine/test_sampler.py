"""Host sampler: greedy is argmax, top-k/top-p restrict the support, a seed makes draws repeatable."""

from __future__ import annotations

import numpy as np

from bonsai.engine.sampler import Sampling, sample

LOGITS = np.array([0.0, 3.0, 1.0, 2.9, -1.0], np.float32)


def test_greedy_is_argmax_with_lowest_id_on_ties():
    assert sample(LOGITS, Sampling(), np.random.default_rng(0)) == 1
    assert sample(np.array([1.0, 5.0, 5.0]), Sampling(), np.random.default_rng(0)) == 1


def test_top_k_limits_the_choices():
    rng = np.random.default_rng(0)
    drawn = {sample(LOGITS, Sampling(temperature=5.0, top_k=2), rng) for _ in range(300)}
    assert drawn == {1, 3}


def test_top_p_keeps_the_smallest_prefix_reaching_p():
    rng = np.random.default_rng(0)
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    drawn = {sample(logits, Sampling(temperature=1.0, top_p=0.75), rng) for _ in range(300)}
    assert drawn == {0, 1}  # 0.5 < 0.75 <= 0.8


def test_temperature_sampling_follows_the_distribution():
    rng = np.random.default_rng(1)
    logits = np.log(np.array([0.7, 0.2, 0.1]))
    n = 4000
    counts = np.bincount([sample(logits, Sampling(temperature=1.0), rng) for _ in range(n)], minlength=3)
    assert np.all(np.abs(counts / n - [0.7, 0.2, 0.1]) < 0.03)  # > 4 sigma for n = 4000


def test_same_seed_same_draws_other_seed_differs():
    def draws(seed):
        rng = np.random.default_rng(seed)
        return [sample(LOGITS, Sampling(temperature=2.0, seed=seed), rng) for _ in range(50)]

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)
