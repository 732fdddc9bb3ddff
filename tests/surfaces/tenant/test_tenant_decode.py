"""The tenant's decode loop on a stand-in engine: seeds repeat, prefill stops when cancelled, logprobs."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest
from bonsai_tenant.decode import Cancelled, DecodeSettings, engine_generate, logprob_of

VOCAB = 50
EOS = 0


class Tok:
    def token_id(self, text):
        return None


class FakeEngine:
    """Positions and batches like bonsai's Engine; logits are a fixed, nearly flat row (EOS very unlikely)."""

    def __init__(self, batch: int = 4) -> None:
        self.tokenizer, self.cfg = Tok(), SimpleNamespace(eos_id=EOS)
        self.batch, self.pos, self.max_positions = batch, 0, 10_000
        self.prefills: list[list[int]] = []
        rng = random.Random(0)
        self.row = [-30.0] + [rng.uniform(0, 0.5) for _ in range(VOCAB - 1)]

    def continue_with(self, ids):
        self.pos = 0
        return list(ids)

    def prefill(self, ids):
        self.prefills.append(list(ids))
        self.pos += len(ids)
        return [self.row]

    def prefill_argmax(self, ids):
        self.prefill(ids)
        return max(range(VOCAB), key=self.row.__getitem__)


def run(settings, cancelled=lambda: False, engine=None):
    engine = engine or FakeEngine()
    seen = []
    out = engine_generate(engine)(list(range(1, 9)), settings, None, lambda t, lp: seen.append(lp), cancelled)
    return out, seen, engine


def test_the_same_seed_draws_the_same_tokens_and_other_seeds_differ():
    draw = [run(DecodeSettings(12, temperature=1.0, seed=s))[0] for s in (7, 7, 8, 9)]
    assert draw[0] == draw[1]
    assert draw[0] != draw[2] and draw[0] != draw[3]
    unseeded = {tuple(run(DecodeSettings(12, temperature=1.0))[0]) for _ in range(3)}
    assert len(unseeded) > 1  # no seed: a fresh one each time, as OpenAI does


def test_top_p_keeps_only_the_likeliest_tokens():
    out, _, engine = run(DecodeSettings(40, temperature=1.0, top_p=0.05, seed=1))
    best = sorted(range(VOCAB), key=engine.row.__getitem__, reverse=True)[:3]
    assert set(out) <= set(best)


def test_prefill_stops_between_batches_once_cancelled():
    engine = FakeEngine(batch=2)
    calls = iter(range(100))
    with pytest.raises(Cancelled):
        run(DecodeSettings(5), cancelled=lambda: next(calls) >= 2, engine=engine)
    assert engine.prefills == [[1, 2], [3, 4]]  # 2 of the prompt's 4 batches, no token generated


def test_logprobs_are_the_models_log_softmax_with_the_top_alternatives():
    out, seen, engine = run(DecodeSettings(3, logprobs=2))
    z = engine.row
    norm = math.log(sum(math.exp(x) for x in z))
    first = seen[0]
    assert first.token_id == out[0] == max(range(VOCAB), key=z.__getitem__)
    assert first.logprob == pytest.approx(z[out[0]] - norm)
    assert [i for i, _ in first.top] == sorted(range(VOCAB), key=z.__getitem__, reverse=True)[:2]
    assert run(DecodeSettings(3))[1] == [None, None, None]
    assert logprob_of([0.0, 0.0], 1, 0).logprob == pytest.approx(math.log(0.5))
