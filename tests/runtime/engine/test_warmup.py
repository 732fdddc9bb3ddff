"""The warm-up at load (`warm_up=True`, engine/warmup.py): the first request compiles no pipeline, and
leaves no trace (a warmed engine produces the bits of a cold one)."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.engine import Sampling, warmup
from bonsai.engine.native import load_engine
from bonsai.gpu.backend import KernelCache
from bonsai.gpu.recorder import Recorder
from bonsai.ops import tiled
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)
PROMPT = [(7 * i) % 250 + 3 for i in range(150)]  # one 128-token batch (tiled on a GPU) and a 22-token one


@pytest.fixture(autouse=True)
def tiled_on(monkeypatch):
    """The tiled matmul switched on (it is off by default): the warm-up must compile it too."""
    monkeypatch.setattr(tiled, "MIN_TOKENS", tiled.ON_THRESHOLD)


@pytest.fixture(params=["adapter", "gpu"])
def fresh(request, gpu, monkeypatch):
    """The shared test device with an empty kernel cache (what other tests compiled does not count), taking
    the adapter's own kernels or (on a CPU adapter) the GPU kernels: buffer and tiled matmuls, fused norms."""
    if request.param == "gpu":
        monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    monkeypatch.setattr(gpu, "_kernels", KernelCache())
    return gpu


def _first_request(engine) -> int:
    """Pipelines compiled by a first request of each kind: greedy and sampled generation, all logits."""
    before = engine.gpu.compiled
    engine.generate(PROMPT, max_tokens=20)
    engine.reset()
    engine.generate(PROMPT[:40], max_tokens=6, sampling=Sampling(temperature=0.8, seed=1))
    engine.reset()
    engine.forward(PROMPT[:50])
    engine.reset()
    return engine.gpu.compiled - before


@pytest.mark.parametrize("kv", ["f32", "q4res"])
def test_a_warm_engine_compiles_nothing_in_its_first_requests(fresh, tmp_path, kv):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=fresh, kv=kv, window=64, max_positions=256, progress=False, warm_up=True)
    assert engine.warmed_kernels > 0 and engine.pos == 0 and engine.fed == []
    assert _first_request(engine) == 0


def test_a_warm_engine_compiles_nothing_with_the_tiled_kernel_off(fresh, tmp_path, monkeypatch):
    """The tiled kernel off (`tiled.MIN_TOKENS` None, the bench's --old-prefill): batches take the matvec, which the warm-up's short
    batch compiles (every batch of 2+ tokens uses the same token-group constant)."""
    monkeypatch.setattr(tiled, "MIN_TOKENS", None)
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=fresh, kv="f32", window=64, max_positions=256, progress=False, warm_up=True)
    assert engine.warmed_kernels > 0 and _first_request(engine) == 0


def test_a_new_cache_mode_is_warmed_too(fresh, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=fresh, kv="f32", window=64, max_positions=256, progress=False, warm_up=True)
    engine.use_cache(kv="q4res", window=64)
    assert engine.pos == 0 and _first_request(engine) == 0


def test_a_warm_up_without_the_tiled_batch_is_caught(gpu, tmp_path, monkeypatch):
    """Mutation: a warm-up whose steps are all shorter than `tiled.MIN_TOKENS` leaves the tiled kernels
    to the first request, and the count sees them."""
    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    monkeypatch.setattr(gpu, "_kernels", KernelCache())
    monkeypatch.setattr(warmup, "step_lengths", lambda batch, room, tiles, **kw: [2, 1])
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv="f32", window=64, max_positions=256, progress=False, warm_up=True)
    assert tiled.MIN_TOKENS is not None and _first_request(engine) > 0


def made_by_first_prefill(engine, n: int, monkeypatch) -> int:
    """GPU buffers and bind groups a prefill of n tokens from position 0 creates."""
    made = []
    gpu_type = type(engine.gpu)
    for name in ("_create_buffer", "_create_bind_group"):
        real = getattr(gpu_type, name)
        monkeypatch.setattr(gpu_type, name, lambda self, *a, _real=real, _name=name: made.append(_name) or _real(self, *a))
    engine.prefill_argmax(PROMPT[:n])
    return len(made)


@pytest.mark.parametrize("kv", ["f32", "q4res"])
def test_on_a_gpu_a_first_prompt_of_a_batch_finds_its_parameters_made(gpu, tmp_path, monkeypatch, kv):
    """GPU adapters warm up with a whole batch: the first prompt of up to that many tokens creates no buffer
    and no bind group (q4res's group kernels take several per 64 positions) but the two that depend on
    its length: the parameter block of its last row's output matmul and that dispatch's bind group."""
    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv=kv, window=64, max_positions=256, batch=140, progress=False,
                         warm_up=True)
    assert made_by_first_prefill(engine, 140, monkeypatch) == 2


def test_a_warm_up_of_short_steps_leaves_a_gpu_s_first_prompt_to_make_them(gpu, tmp_path, monkeypatch):
    """Mutation: the CPU adapters' short warm-up on a GPU; the count sees what the first prompt makes."""
    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    real = warmup.step_lengths
    monkeypatch.setattr(warmup, "step_lengths", lambda batch, room, tiles, **kw: real(batch, room, tiles))
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv="q4res", window=64, max_positions=256, batch=140, progress=False,
                         warm_up=True)
    assert made_by_first_prefill(engine, 140, monkeypatch) > 20


def test_the_warm_up_leaves_no_trace(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q8_0", **TINY)
    runs = []
    for warm in (False, True):
        engine = load_engine(path, gpu=gpu, kv="f32", window=64, max_positions=256, progress=False, warm_up=warm)
        logits = np.asarray(engine.forward(PROMPT[:45])).copy()
        engine.reset()
        runs.append((logits.view(np.uint32), engine.generate(PROMPT, max_tokens=12).tokens))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


def test_warm_up_steps_fit_the_positions_and_the_batch():
    least = tiled.MIN_TOKENS or 2
    assert warmup.step_lengths(128, 1000, True) == [least, 2, 1]
    assert warmup.step_lengths(128, 1000, False) == [2, 1]  # no tiled kernel to compile (texture matrices)
    assert warmup.step_lengths(4, 1000, True) == [4, 2, 1]
    assert warmup.step_lengths(1, 1000, True) == [1]
    assert warmup.step_lengths(128, least + 1, True) == [least, 1]
    assert warmup.step_lengths(512, 1000, True, full=True) == [512, 2, 1]  # a GPU: a whole batch first
    assert warmup.step_lengths(512, 300, True, full=True) == [297, 2, 1]
    assert warmup.step_lengths(512, 1000, False, full=True) == [512, 2, 1]
    assert warmup.step_lengths(128, 2, True) == [2]
    # a grouped mode (groups of 64) on a GPU: the one-token step fills a group, or the resident block's first step
    assert warmup.step_lengths(512, 1000, True, full=True, fill_group=64) == [512, 2, 61, 1]
    assert warmup.step_lengths(512, 1000, True, full=True, fill_group=64, resident=True) == [512, 2, 60, 1]
    assert warmup.step_lengths(512, 300, True, full=True, fill_group=64) == [297, 2, 1]  # no room to pad
    assert warmup.step_lengths(128, 1000, True, fill_group=64) == [least, 2, 1]  # a CPU: no whole batch, no pad


def bind_groups_of_a_first_request(path, gpu, monkeypatch, max_tokens: int) -> int:
    """Bind groups a warmed q4res engine (on a fresh kernel cache) makes in its first greedy request: a 40-token
    prompt, then `max_tokens` GPU-resident steps (past position 63 they cross the fill of the first group)."""
    monkeypatch.setattr(gpu, "_kernels", KernelCache())
    engine = load_engine(path, gpu=gpu, kv="q4res", window=256, max_positions=256, batch=140, progress=False,
                         warm_up=True)
    made = []
    real = type(gpu)._create_bind_group
    monkeypatch.setattr(type(gpu), "_create_bind_group", lambda self, *a: made.append(1) or real(self, *a))
    assert engine.generate(PROMPT[:40], max_tokens=max_tokens, stop_ids=set()).tokens
    monkeypatch.setattr(type(gpu), "_create_bind_group", real)
    return len(made)


@pytest.mark.parametrize("pad", [True, False])
def test_on_a_gpu_the_first_decode_across_a_group_fill_finds_its_bind_groups_made(gpu, tmp_path, monkeypatch, pad):
    """GPU adapters warm a grouped mode up through a group fill in a GPU-resident step (`step_lengths`'
    fill_group): a first request whose decode crosses one makes no bind group that a shorter one does not (the
    group kernels bind several per layer). Mutation (pad=False): the warm-up without it, and the fill makes them."""
    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    if not pad:
        real = warmup.step_lengths
        monkeypatch.setattr(warmup, "step_lengths", lambda batch, room, tiles, full=False, **kw: real(batch, room, tiles, full))
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    short = bind_groups_of_a_first_request(path, gpu, monkeypatch, 16)  # positions 40..55: no fill
    across = bind_groups_of_a_first_request(path, gpu, monkeypatch, 48)  # to 87: the fill at 63
    assert (across == short) if pad else (across > short)
