"""A small Bonsai-shaped model (Qwen3, every matrix Q1_0, head dim 128) force-decoded against the numpy reference.

A few hundred tokens: batched prefill steps, then a long tail of one-token decode steps, on each kernel family
(the CPU kernels a CPU adapter picks, and the buffer kernels a GPU picks, with and without Q1_0's one-token
SPREAD product), scored as the default model's long forced decoding is (`long_forced.compare`). The mutation makes
SPREAD drop one partial of each row, and the check must see it.
"""

from __future__ import annotations

import pytest

from bonsai.diagnostics import long_forced as lf
from bonsai.diagnostics.forced_plan import schedule
from bonsai.engine.native import load_engine
from bonsai.ops import matmul as mm
from bonsai.reference import ReferenceModel
from tests.helpers.shader_patch import patch_shader
from tests.helpers.synthetic import write_tiny_gguf

TOKENS, TAIL = 256, 96  # tokens of text; the last TAIL positions are scored after one-token decode steps
SHAPE = dict(n_layers=2, dim=256, n_heads=2, n_kv_heads=1, head_dim=128, ffn_dim=512, tied=True)


@pytest.fixture(scope="module")
def bonsai_shaped(tmp_path_factory):
    path = write_tiny_gguf(tmp_path_factory.mktemp("q1") / "bonsai.gguf", "qwen3", weight_type="Q1_0",
                           context_length=512, seed=60, **SHAPE)
    return path, ReferenceModel(path)


@pytest.fixture(scope="module")
def reference_run(bonsai_shaped, gpu):
    path, model = bonsai_shaped
    engine = load_engine(path, gpu=gpu, kv="f32", max_positions=TOKENS, progress=False)
    ids = lf.long_text_ids(engine.tokenizer, TOKENS)
    steps = schedule(len(ids) - 1, engine.batch, tail=TAIL)
    return ids, steps, lf.reference_forced(model, ids, steps, "f32")[0]


def _engine(path, gpu, monkeypatch, buffers: bool, spread: bool = False):
    monkeypatch.setattr(mm, "Q1_SPREAD", spread)
    if buffers:  # the matrices stay in storage buffers: the GPU kernels, even on a CPU adapter
        monkeypatch.setattr(mm, "_planar", lambda gpu, m: m)
    return load_engine(path, gpu=gpu, kv="f32", max_positions=TOKENS, progress=False)


def _check(engine, reference_run, n_steps: int | None = None) -> lf.Comparison:
    """The engine against the reference over the first n_steps steps of the schedule (default: all)."""
    ids, steps, want = reference_run
    got = lf.engine_forced(engine, ids, steps[:n_steps])
    n = len(got.logprob)
    return lf.compare(got, lf.Forced(want.logprob[:n], want.argmax[:n]), kv="f32", window=TOKENS)


def test_the_model_has_bonsai_s_layout(bonsai_shaped):
    cfg = bonsai_shaped[1].config
    assert (cfg.arch, cfg.head_dim, cfg.qk_norm, cfg.tied_output) == ("qwen3", 128, True, True)


@pytest.mark.parametrize("buffers,spread", [(False, False), (True, False), (True, True)],
                         ids=["cpu-kernels", "gpu-kernels", "gpu-kernels-spread"])
def test_forced_decoding_matches_the_reference(bonsai_shaped, gpu, monkeypatch, reference_run, buffers, spread):
    engine = _engine(bonsai_shaped[0], gpu, monkeypatch, buffers, spread)
    if buffers:
        assert engine.model.w.layers[0].wo.tex is None
        assert mm.constants(engine.model.w.layers[0].wo, 1)["SPREAD"] == spread
    r = _check(engine, reference_run)
    assert r.tokens == TOKENS and r.ok, r.describe()


def test_a_spread_product_that_drops_a_partial_is_caught(bonsai_shaped, gpu, monkeypatch, reference_run):
    patch_shader(monkeypatch, gpu, "matmul.wgsl", "for (var i = 0u; i < ROWS; i++) { s += red[base + i]; }",
                 "for (var i = 1u; i < ROWS; i++) { s += red[base + i]; }")
    batched = sum(1 for s, e in reference_run[1] if e - s > 1)
    r = _check(_engine(bonsai_shaped[0], gpu, monkeypatch, True, spread=True), reference_run, batched + 8)  # 8 steps
    assert not r.ok and r.first_bad is not None and r.first_bad >= TOKENS - TAIL, r.describe()
