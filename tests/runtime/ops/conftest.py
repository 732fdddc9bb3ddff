"""Helpers for the op tests: random GGML tensors quantised by the gguf package (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.ops.qtypes import QTYPES
from bonsai.reference.quants import quantize_q1_0


def quantized(name: str, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """Random weights quantised to `name` by gguf.quants (Q1_0 by our packer): uint8 (rows, row_bytes)."""
    from gguf import GGMLQuantizationType, quants

    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols)).astype(np.float32)
    if name == "F32":
        return w.view(np.uint8).reshape(rows, -1)
    if name == "Q1_0":
        return quantize_q1_0(w)
    out = quants.quantize(w, GGMLQuantizationType[name])
    return np.ascontiguousarray(out).view(np.uint8).reshape(rows, QTYPES[name].row_bytes(cols))


@pytest.fixture
def make_quantized():
    return quantized


@pytest.fixture(params=["buffer", "texture"])
def both_layouts(request, monkeypatch):
    """Run a test with each matmul kernel: the GPU one (raw blocks in a storage buffer) and the CPU one
    (planar blocks in a word texture), whatever the adapter would pick."""
    from functools import partial

    from bonsai.ops import matmul as mm

    monkeypatch.setattr(mm, "upload_matrix", partial(mm.upload_matrix, texture=request.param == "texture"))
    return request.param
