"""Staging's bookkeeping of a replayed step: `book_layers` books what `book_rows` layer by layer books."""

from __future__ import annotations

import pytest

from bonsai.kv.errors import KVError
from bonsai.kv.format.modes import MODES
from bonsai.kv.layout import Layout
from bonsai.kv.staging import Staging


@pytest.fixture(params=["f32", "q4res"])
def layout(request):
    return Layout(MODES[request.param], n_layers=5, n_kv=2, head_dim=64, max_positions=256, window=128)


def test_booking_every_layer_at_once_books_what_layer_by_layer_books(gpu, layout):
    one, all_at_once = Staging(gpu, layout, 8), Staging(gpu, layout, 8)
    for pos in (3, 4):
        for layer in range(layout.n_layers):
            one.book_rows(layer, pos, 1)
        all_at_once.book_layers(layout.n_layers, pos, 1)
    assert all_at_once.pending == one.pending and len(one.pending) == 2 * layout.n_layers
    assert (all_at_once.used_words, all_at_once.used_flags) == (one.used_words, one.used_flags)


def test_a_step_that_does_not_fit_books_nothing(gpu, layout):
    staging = Staging(gpu, layout, 1)
    staging.book_layers(layout.n_layers, 0, 1)
    before = (list(staging.pending), staging.used_words, staging.used_flags)
    with pytest.raises(KVError, match="staging area full"):
        staging.book_layers(layout.n_layers, 1, 1)
    assert (staging.pending, staging.used_words, staging.used_flags) == before
