"""The page's attention check also runs on the native backend (through bonsai.kv.attention.driver, as in the page)."""

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
    result = attention_check.run(gpu)
    assert result["ok"], result
    assert len(result["cases"]) == len(attention_check.VARIANTS) * len(attention_check.CASES) and all(c["window_sizes"] for c in result["cases"])


@pytest.mark.parametrize("mutate", ["drop_boundary", "normalise_each_window"])
def test_attention_check_catches_each_mutation_on_the_native_gpu(gpu, attention_check, mutate):
    result = attention_check.run(gpu, mutate=mutate)
    assert not result["ok"] and all(c["mismatched"] for c in result["cases"]), result


def test_attention_check_rejects_an_unknown_mutation(gpu, attention_check):
    with pytest.raises(ValueError, match="unknown mutation"):
        attention_check.run(gpu, mutate="nope")


def test_gpu_verbs_contract_holds_on_the_native_gpu(gpu, monkeypatch):
    monkeypatch.syspath_prepend(str(APP))
    from bonsai_extension import verbs_check

    result = verbs_check.run(gpu)
    assert result["backend"] == "Gpu" and result["ok"], result


def test_gpu_verbs_check_fails_when_a_verb_is_broken(gpu, monkeypatch):
    """Mutation: a `write` that ignores its offset must be caught by the verbs check."""
    monkeypatch.syspath_prepend(str(APP))
    from bonsai_extension import verbs_check

    original = type(gpu).write
    monkeypatch.setattr(type(gpu), "write", lambda self, buf, data, offset=0: original(self, buf, data, 0))
    result = verbs_check.run(gpu)
    assert not result["ok"] and not result["items"]["write_read_offsets"]["ok"]
