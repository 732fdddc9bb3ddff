"""Engine fixtures shared by the fusion tests."""

from __future__ import annotations

import pytest

from bonsai.engine.native import load_engine
from bonsai.ops import matmul as mm
from tests.helpers.synthetic import write_tiny_gguf


@pytest.fixture
def gpu_kernel_engine(gpu, tmp_path, monkeypatch):
    """make(**tiny_shape): an engine on a tiny Q4_1 llama whose matrices sit in buffers (the GPU kernels,
    which fuse the norm and RoPE), even on a CPU adapter; f32 KV, 8-position windows."""

    def make(max_positions: int = 32, **shape):
        monkeypatch.setattr(mm, "_planar", lambda gpu, m: m)
        path = write_tiny_gguf(tmp_path / "t.gguf", "llama", weight_type="Q4_1", tied=False, **shape)
        return load_engine(path, gpu=gpu, kv="f32", window=8, max_positions=max_positions, progress=False)

    return make
