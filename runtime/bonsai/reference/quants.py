"""Dequantise GGUF tensors to float32 numpy arrays (the `gguf` package's codecs plus Bonsai's Q1_0)."""

from __future__ import annotations

import gguf.quants
import numpy as np
from gguf import GGMLQuantizationType

from ..gguf import BLOCK_SIZES, GGMLType, TensorInfo

Q1_0_BLOCK = 128  # weights per Q1_0 block; 18 bytes: f16 scale d, then 16 bytes of sign bits


def dequantize_q1_0(blocks: np.ndarray) -> np.ndarray:
    """[n_blocks, 18] uint8 -> [n_blocks, 128] float32: weight j = +d if bit j is set else -d."""
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # [n_blocks, 1]
    bits = np.unpackbits(blocks[:, 2:], axis=1, bitorder="little")  # [n_blocks, 128], bit j of byte j//8
    return np.where(bits.astype(bool), d, -d).astype(np.float32)


def quantize_q1_0(x: np.ndarray) -> np.ndarray:
    """[rows, cols] float -> [rows, cols / 128 * 18] uint8 Q1_0 blocks: d = f16(mean |x|), bit = x >= 0."""
    rows, cols = x.shape
    blocks = np.asarray(x, np.float32).reshape(-1, Q1_0_BLOCK)
    d = np.abs(blocks).mean(axis=1, keepdims=True).astype(np.float16)
    bits = np.packbits(blocks >= 0, axis=1, bitorder="little")  # [n_blocks, 16]
    return np.concatenate([d.view(np.uint8), bits], axis=1).reshape(rows, cols // Q1_0_BLOCK * 18)


def dequantize_raw(raw: np.ndarray, ggml_type: GGMLType) -> np.ndarray:
    """Raw blocks [rows, row_bytes] uint8 -> [rows, cols] float32."""
    if ggml_type == GGMLType.Q1_0:
        rows = raw.shape[0]
        return dequantize_q1_0(raw.reshape(-1, 18)).reshape(rows, -1)
    return np.asarray(gguf.quants.dequantize(raw, GGMLQuantizationType(ggml_type.value)), np.float32)


def dequantize(info: TensorInfo, data: memoryview | bytes) -> np.ndarray:
    """A tensor's bytes -> float32 array in numpy order (shape = reversed ggml shape)."""
    shape = tuple(reversed(info.shape))
    block_weights, block_bytes = BLOCK_SIZES[info.ggml_type]
    row_bytes = info.shape[0] // block_weights * block_bytes
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, row_bytes)
    return dequantize_raw(raw, info.ggml_type).reshape(shape)
