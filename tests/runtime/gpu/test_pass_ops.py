"""Dispatches through wgpu-native directly (gpu/pass_ops.py) give the bits wgpu-py's methods give."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.engine.native import load_engine
from bonsai.gpu import pass_ops
from tests.helpers.synthetic import write_tiny_gguf

PROMPT = [5, 17, 42, 9, 33, 2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "t.gguf", "llama", dim=128, n_heads=2, n_kv_heads=1,
                           head_dim=64, ffn_dim=256)


def _logits_and_tokens(gpu, tiny, direct: bool) -> tuple[np.ndarray, list[int]]:
    """Prefill logits and 6 greedy tokens with one dispatch call path."""
    gpu.direct_pass_calls = direct
    try:
        engine = load_engine(tiny, gpu=gpu, kv="q4res", window=64, progress=False)
        logits = np.asarray(engine.forward(PROMPT), np.float32)
        engine.reset()
        tokens = engine.generate(PROMPT, max_tokens=6, stop_ids=set()).tokens  # decode steps too
        return logits, tokens
    finally:
        gpu.direct_pass_calls = True


def test_direct_calls_give_the_bits_of_wgpu_pys_calls(gpu, tiny):
    direct, reference = _logits_and_tokens(gpu, tiny, True), _logits_and_tokens(gpu, tiny, False)
    assert np.array_equal(direct[0].view(np.uint32), reference[0].view(np.uint32))
    assert direct[1] == reference[1] and len(direct[1]) == 6


def test_the_direct_path_is_taken_where_wgpu_native_is(gpu):
    encoder = gpu.device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass()
    ops = pass_ops.direct_ops(compute_pass)
    assert ops[0] != compute_pass.set_pipeline  # wgpu 0.32 has the cffi handle: the direct calls
    compute_pass.end()


def test_without_wgpu_natives_handle_the_methods_of_wgpu_py_are_used(gpu, monkeypatch):
    monkeypatch.setattr(pass_ops, "_native_lib", lambda: None)
    encoder = gpu.device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass()
    assert pass_ops.direct_ops(compute_pass) == pass_ops.wgpu_py_ops(compute_pass)
    compute_pass.end()


def test_a_direct_dispatch_that_drops_a_grid_dimension_is_caught(gpu, tiny, monkeypatch):
    """Mutation: the direct dispatch ignores y (a prefill's token rows); the logits differ."""
    real = pass_ops.direct_ops

    def broken(compute_pass):
        set_pipeline, set_bind_group, dispatch = real(compute_pass)
        return set_pipeline, set_bind_group, lambda x, y=1, z=1: dispatch(x, 1, z)

    reference = _logits_and_tokens(gpu, tiny, False)[0]
    monkeypatch.setattr(pass_ops, "direct_ops", broken)
    gpu.direct_pass_calls = True
    engine = load_engine(tiny, gpu=gpu, kv="q4res", window=64, progress=False)
    got = np.asarray(engine.forward(PROMPT), np.float32)
    assert not np.array_equal(got.view(np.uint32), reference.view(np.uint32))


def _decoded_logits(gpu, tiny, native: bool) -> tuple[np.ndarray, int]:
    """Logits of 12 taped decode steps (f32 KV, the GPU kernels' attention) and how many were replayed."""
    gpu.native_replay = native
    try:
        engine = load_engine(tiny, gpu=gpu, kv="f32", window=64, progress=False)
        engine.cache.variant = "blocks"
        engine.prefill_argmax(PROMPT)
        tok, rows = 2, []
        for _ in range(12):
            row = np.asarray(engine._step([tok]))[0]
            rows.append(row.view(np.uint32).copy())
            tok = int(row.argmax())
        return np.array(rows), engine.model.replays
    finally:
        gpu.native_replay = True


def test_a_replay_through_native_handles_gives_the_bits_of_the_calls_one_by_one(gpu, tiny):
    native, calls = _decoded_logits(gpu, tiny, True), _decoded_logits(gpu, tiny, False)
    assert native[1] >= 8 and calls[1] == native[1]  # most steps replayed, both ways
    assert np.array_equal(native[0], calls[0])


def test_a_native_replay_that_drops_a_grid_dimension_is_caught(gpu, tiny, monkeypatch):
    """Mutation: the native run keeps x and z of each dispatch but not y (the fold's blocks, the heads)."""
    reference = _decoded_logits(gpu, tiny, False)[0]
    real = pass_ops.NativeRun.__init__

    def broken(self, entries):
        real(self, entries)
        self.entries = [(p, bg, x, 1, z) for p, bg, x, _, z in self.entries]

    monkeypatch.setattr(pass_ops.NativeRun, "__init__", broken)
    assert not np.array_equal(_decoded_logits(gpu, tiny, True)[0], reference)
