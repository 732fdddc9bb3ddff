"""The KV store in the QKV matmul's epilogue (GPU kernels, decode steps of f32 and q4res caches): the tokens,
host master and slot/residual bits of the store dispatch, replayed or recorded, one dispatch fewer per layer."""

from __future__ import annotations

import dataclasses

import pytest

import bonsai.kv.attention.driver as attention
from bonsai.engine.native import load_engine
from bonsai.kv.cache import KVCache
from bonsai.ops import matmul as mm
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)  # untied: varied ids
PROMPT = [3, 1, 4, 1, 5, 9]
TOKENS = 70  # q4res fills its first 64-position group on the way


@pytest.fixture(params=["f32", "q4res"])
def engine(request, gpu, tmp_path, monkeypatch):
    monkeypatch.setattr(mm, "_planar", lambda gpu, m: m)  # the GPU kernels, even on a CPU adapter
    monkeypatch.setattr(attention, "BLOCK", 4)
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv=request.param, window=64, max_positions=128, progress=False)
    engine.cache.variant = "blocks"
    return engine


def _run(engine, fuse: bool, replay: bool, steps: int = 16):
    """(tokens, host master and residual, slot and residual bytes, store.wgsl dispatches, replays) of one greedy generation
    (dispatches of the store kernel: a run after the first also decodes q4res' quantised group back)."""
    engine.reset()
    for host in engine.cache.master.layers:  # a blank master, so rows missing from it show
        host[:] = bytes(len(host))
    engine.model.fuse_store, engine.model.replay, engine.model.replays = fuse, replay, 0
    engine.model.forget_tapes()
    engine.resident_steps = steps
    real, stores = engine.gpu.dispatch, []

    def dispatch(kernel, buffers, groups):
        stores.append(kernel.name.endswith("/store.wgsl"))
        real(kernel, buffers, groups)

    engine.gpu.dispatch = dispatch
    try:
        tokens = engine.generate(PROMPT, max_tokens=TOKENS, stop_ids=set()).tokens
        engine.cache.sync_host()
    finally:
        del engine.gpu.dispatch
    dispatches = sum(stores)
    c = engine.cache
    bufs = [engine.gpu.read(b) for b in c._slots.resident.values()]
    bufs += [engine.gpu.read(b) for b in (c.residual.bufs if c.residual is not None else [])]
    host = [*c.master.layers, *(c.residual.host_k + c.residual.host_v if c.residual is not None else [])]
    return tokens, b"".join(bytes(h) for h in host), bufs, dispatches, engine.model.replays


@pytest.mark.parametrize("steps", [16, 1], ids=["parked", "synced"])
def test_the_epilogue_store_gives_the_store_dispatchs_tokens_and_bits(engine, steps):
    plain = _run(engine, False, False, steps)
    recorded, replayed = _run(engine, True, False, steps), _run(engine, True, True, steps)
    assert len(plain[0]) == TOKENS and plain[1].count(0) < len(plain[1])
    for fused in (recorded, replayed):
        assert fused[:3] == plain[:3]  # tokens, host master and residual, every slot and residual byte
    assert recorded[3] == plain[3] - (TOKENS - 1) * engine.cfg.n_layers  # no store dispatch in a decode step
    assert replayed[3] == recorded[3]  # nor in the recorded steps of the replayed run (replays are not counted)
    assert recorded[4] == 0 and replayed[4] > TOKENS // 2


def test_replayed_fused_steps_without_their_bookkeeping_are_caught(engine, monkeypatch):
    """Mutation: a replayed step's taped epilogue writes its rows, but its staging entries are not booked."""
    plain = _run(engine, True, False)
    monkeypatch.setattr(KVCache, "replay_appends", lambda self, pos, n: None)
    replayed = _run(engine, True, True)
    assert replayed[4] > 0 and replayed[:3] != plain[:3]


def test_an_adapter_with_8_storage_buffers_per_stage_keeps_the_store_dispatch(engine, monkeypatch):
    fused = _run(engine, True, False)  # recorded: a replayed step's dispatches are not counted
    monkeypatch.setattr(engine.gpu, "limits", dataclasses.replace(engine.gpu.limits, max_storage_buffers=8))
    limited = _run(engine, True, False)
    assert limited[:3] == fused[:3]
    assert limited[3] == fused[3] + (TOKENS - 1) * engine.cfg.n_layers
