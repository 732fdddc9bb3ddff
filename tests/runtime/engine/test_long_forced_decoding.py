"""Issue 16's bar: 1,100 tokens of real text force-decoded on the default model against the numpy reference.

f32 and q4res KV, each with the default window (one window) and with a window that splits the text in
three; batched prefill steps and then one-token decode steps (`long_forced.schedule`). One model load
and one f32 reference serve every case. The mutation test makes attention stop folding after 500
positions of a window, the way lavapipe's loop limiter once did, and the check must see it.
"""

from __future__ import annotations

import dataclasses

import pytest

from bonsai.diagnostics import long_forced as lf
from bonsai.diagnostics.numpy_cache import NumpyKVCache
from bonsai.engine.native import load_engine
from bonsai.kv.attention.driver import Attention
from bonsai.models import default_model_path
from bonsai.reference import ReferenceModel

SPLIT = lf.split_window(lf.TOKENS)


@pytest.fixture(scope="module")
def long_forced(gpu):
    engine = load_engine(None, gpu=gpu, max_positions=lf.TOKENS, cache_factory=NumpyKVCache, progress=False)
    ids = lf.long_text_ids(engine.tokenizer)
    return lf.LongForced(engine, ReferenceModel(default_model_path()), ids)


def test_the_split_window_cuts_the_text_in_three():
    assert SPLIT < lf.TOKENS // 2 < lf.TOKENS <= 3 * SPLIT and SPLIT % 64 == 0


@pytest.mark.parametrize("kv", ["f32", "q4res"])
@pytest.mark.parametrize("window", [2048, SPLIT])
def test_long_forced_decoding_matches_the_reference(long_forced, kv, window):
    r = long_forced.check(kv, window)
    assert r.tokens == lf.TOKENS
    assert r.ok, r.describe()


def test_attention_that_stops_folding_after_500_positions_is_caught(long_forced, monkeypatch):
    """The bug lavapipe's loop limiter caused, injected on any driver: every fold piece ends after 500."""
    real = Attention.pieces

    def truncated(self, windows, n_q):
        return [dataclasses.replace(w, end=min(w.end, w.start + 500)) for w in real(self, windows, n_q)]

    monkeypatch.setattr(Attention, "pieces", truncated)
    r = long_forced.prefix(640).check("f32", 2048)  # past 500 positions, at half the full text's cost
    assert not r.ok and r.first_bad is not None and r.first_bad > 500, r.describe()
