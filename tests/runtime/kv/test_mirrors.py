"""The serial kernel's texture mirrors (kv/mirrors.py): marks are kept only where a mirror will take them back."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.engine.native import load_engine
from bonsai.gpu.recorder import Recorder
from bonsai.kv.attention.driver import default_variant
from bonsai.kv.cache import KVCache
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)


def _marks_after_requests(engine, requests: int) -> list[int]:
    """The mirrors' kept marks after each of `requests` greedy requests from position 0."""
    kept = []
    for r in range(requests):
        engine.reset()
        engine.generate([(7 * i + r) % 250 + 3 for i in range(100)], max_tokens=30, stop_ids=set())
        kept.append(sum(len(marks) for marks in engine.cache._mirrors._dirty.values()))
    return kept


@pytest.mark.parametrize("kv", ["f32", "q4res"])
def test_requests_on_the_gpu_kernels_keep_no_marks(gpu, tmp_path, monkeypatch, kv):
    """GPU kernels read no texture, so no mark is ever taken back: none may be kept (a server's grew with every
    request: ~10 a request on this two-layer model, ~150 on the default model)."""
    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", **TINY)
    engine = load_engine(path, gpu=gpu, kv=kv, window=256, max_positions=256, progress=False)
    assert default_variant(gpu) == "blocks" and _marks_after_requests(engine, 3) == [0, 0, 0]


def test_a_mirrored_buffer_keeps_its_marks_until_the_next_fold(gpu):
    """The serial kernel's mirrors: rows appended after a fold are marked, and the next fold takes them back."""
    rng = np.random.default_rng(0)
    cache = KVCache(gpu, 1, 1, 64, 64, mode="f32", window=64, variant="serial")

    def append(pos: int, n: int) -> None:
        k, v = (rng.standard_normal((n, 1, 64)).astype(np.float32) for _ in range(2))
        cache.append(0, gpu.upload(k), gpu.upload(v), pos, n)

    def kept() -> int:
        return sum(len(marks) for marks in cache._mirrors._dirty.values())

    q, out = gpu.upload(np.ones((1, 2, 64), np.float32)), gpu.buffer(2 * 64 * 4)
    append(0, 4)
    cache.attend(0, q, out, 3, 1, 2)  # the slot's mirror is made here
    append(4, 1)
    assert kept() > 0
    cache.attend(0, q, out, 4, 1, 2)
    assert kept() == 0
