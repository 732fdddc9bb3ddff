"""The page's checks also run on the native backend: one check, two `Gpu` implementations."""

from __future__ import annotations

from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[3] / "surfaces" / "extension" / "app"


@pytest.fixture
def attention_check(monkeypatch):
    monkeypatch.syspath_prepend(str(APP))
    from bonsai_extension import attention_check

    return attention_check


def test_attention_check_passes_on_the_native_gpu(gpu, attention_check):
    result = attention_check.run(gpu, positions=24, random_splits=2)
    assert result["ok"] and result["mismatches"] == [] and result["splits_checked"] == 4


def test_attention_check_catches_a_dropped_position_on_the_native_gpu(gpu, attention_check):
    result = attention_check.run(gpu, positions=24, random_splits=2, mutate="drop_window_start")
    assert not result["ok"] and len(result["mismatches"]) == result["splits_checked"]


def test_attention_check_rejects_an_unknown_mutation(gpu, attention_check):
    with pytest.raises(ValueError, match="unknown mutation"):
        attention_check.run(gpu, mutate="nope")
