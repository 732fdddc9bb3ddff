"""The quality table's K/V: stored through `stored_kv.mode_transform` with decode semantics, on a tiny GGUF."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.diagnostics import quality
from bonsai.kv.format.codec import GROUP
from bonsai.kv.format.modes import MODES
from bonsai.reference import ReferenceModel
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)  # head_dim 64: every mode's rows


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    model = ReferenceModel(write_tiny_gguf(tmp_path_factory.mktemp("quality") / "tiny.gguf", **TINY))
    ids = [int(t) for t in np.random.default_rng(0).integers(0, 200, 2 * GROUP + 5)]
    return model, ids


def _log_probs(model, ids, mode: str) -> np.ndarray:
    return np.concatenate(list(quality.mode_log_probs(model, ids, MODES[mode])))


def _first_difference(model, ids) -> int:
    """The first position whose q4res log-probs differ from f32's."""
    differ = np.any(_log_probs(model, ids, "q4res") != _log_probs(model, ids, "f32"), axis=-1)
    return int(np.flatnonzero(differ)[0])


def test_steps_cover_the_positions_in_order_and_split_each_full_chunk_before_its_last_position():
    assert quality.steps(2 * GROUP + 5) == [(0, GROUP - 1), (GROUP - 1, GROUP), (GROUP, 2 * GROUP - 1),
                                            (2 * GROUP - 1, 2 * GROUP), (2 * GROUP, 2 * GROUP + 5)]


def test_a_position_sees_its_group_quantised_only_once_the_group_is_full(tiny):
    # q4res keeps the newest K and V group (2 * GROUP positions) in f32: until its last position is
    # appended the cache holds exactly what f32 holds, and that position is the first to see it quantised
    assert MODES["q4res"].group == 2 * GROUP
    assert _first_difference(*tiny) == 2 * GROUP - 1


def test_the_check_catches_chunks_not_split_before_their_last_position(tiny, monkeypatch):
    # mutation: whole chunks, so the queries of a chunk that fills a group all see it quantised
    monkeypatch.setattr(quality, "steps", lambda n: [(i, min(i + GROUP, n)) for i in range(0, n, GROUP)])
    assert _first_difference(*tiny) == GROUP
