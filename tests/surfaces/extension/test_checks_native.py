"""The page's attention check also runs on the native backend, and drives the kernels as bonsai.kv does."""

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
    assert len(result["cases"]) == 2 * len(attention_check.CASES) and all(c["window_sizes"] for c in result["cases"])


@pytest.mark.parametrize("mutate", ["drop_boundary", "normalise_each_window"])
def test_attention_check_catches_each_mutation_on_the_native_gpu(gpu, attention_check, mutate):
    result = attention_check.run(gpu, mutate=mutate)
    assert not result["ok"] and all(c["mismatched"] for c in result["cases"]), result


@pytest.mark.parametrize("variant", ["wide", "serial"])
def test_pure_python_driver_matches_the_runtime_driver_bit_for_bit(gpu, attention_check, variant):
    """The page's struct-packed driver and bonsai.kv.attention (numpy) give identical output bits."""
    np = pytest.importorskip("numpy")
    from bonsai.kv.attention import Attention, Window

    case = attention_check.Case(4, 2, 32, "f32", 21, 2)
    rng = np.random.default_rng(7)
    q = rng.standard_normal((case.n_q, case.n_heads, case.head_dim)).astype(np.float32)
    k, v = (rng.standard_normal((case.kv_len, case.n_kv, case.head_dim)).astype(np.float32) for _ in "kv")
    qb, kb, vb = gpu.upload(q), gpu.upload(k), gpu.upload(v)
    nbytes = q.nbytes

    ours = gpu.buffer(nbytes)
    attention_check._Driver(gpu, case, "", variant).record(qb, kb, vb, ours, [(0, 9), (9, case.kv_len)])
    theirs, state = gpu.buffer(nbytes), gpu.buffer(case.n_q * case.n_heads * (case.head_dim + 2) * 4)
    runtime = Attention(gpu, case.n_heads, case.n_kv, case.head_dim, "f32", variant=variant)
    runtime.record(qb, theirs, state, case.kv_len - case.n_q, case.n_q, [Window(kb, vb, 0, case.kv_len)])
    a = np.frombuffer(gpu.read(ours), np.uint32)
    b = np.frombuffer(gpu.read(theirs), np.uint32)
    assert np.array_equal(a, b) and np.any(a)


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
