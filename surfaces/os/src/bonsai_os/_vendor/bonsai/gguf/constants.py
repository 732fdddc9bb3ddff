"""GGUF format constants: metadata value types and ggml tensor types with their block sizes."""

from __future__ import annotations

from enum import IntEnum

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32


class ValueType(IntEnum):
    """Type tag of a metadata value (GGUF spec `gguf_metadata_value_type`)."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


# struct format character of each fixed-size value type (little-endian is applied by the reader).
VALUE_FORMATS: dict[ValueType, str] = {
    ValueType.UINT8: "B",
    ValueType.INT8: "b",
    ValueType.UINT16: "H",
    ValueType.INT16: "h",
    ValueType.UINT32: "I",
    ValueType.INT32: "i",
    ValueType.FLOAT32: "f",
    ValueType.BOOL: "?",
    ValueType.UINT64: "Q",
    ValueType.INT64: "q",
    ValueType.FLOAT64: "d",
}


class GGMLType(IntEnum):
    """ggml tensor type ids (ggml.h `enum ggml_type`), the ones a GGUF tensor info may carry.

    Q1_0 is Bonsai's 1-bit type and ggml's own (id 41, upstream since 2025; the `gguf` 0.19
    package knows it with the same block size), so files stay readable by llama.cpp tooling:
    128 weights per 18-byte block, laid out like ggml's `block_q1_0`:
        bytes 0..1   d      f16 scale
        bytes 2..17  qs     128 sign bits, weight j is bit (j % 8) of qs[j // 8]
    weight j = +d if its bit is 1 else -d.
    """

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41


_QK_K = 256

# (weights per block, bytes per block) of every type, as in ggml's type traits.
BLOCK_SIZES: dict[GGMLType, tuple[int, int]] = {
    GGMLType.F32: (1, 4),
    GGMLType.F16: (1, 2),
    GGMLType.Q4_0: (32, 2 + 16),
    GGMLType.Q4_1: (32, 2 + 2 + 16),
    GGMLType.Q5_0: (32, 2 + 4 + 16),
    GGMLType.Q5_1: (32, 2 + 2 + 4 + 16),
    GGMLType.Q8_0: (32, 2 + 32),
    GGMLType.Q8_1: (32, 4 + 4 + 32),
    GGMLType.Q2_K: (256, 2 + 2 + _QK_K // 16 + _QK_K // 4),
    GGMLType.Q3_K: (256, 2 + _QK_K // 4 + _QK_K // 8 + 12),
    GGMLType.Q4_K: (256, 2 + 2 + _QK_K // 2 + 12),
    GGMLType.Q5_K: (256, 2 + 2 + _QK_K // 2 + _QK_K // 8 + 12),
    GGMLType.Q6_K: (256, 2 + _QK_K // 2 + _QK_K // 4 + _QK_K // 16),
    GGMLType.Q8_K: (256, 4 + _QK_K + _QK_K // 8),
    GGMLType.IQ2_XXS: (256, 2 + _QK_K // 4),
    GGMLType.IQ2_XS: (256, 2 + _QK_K // 4 + _QK_K // 32),
    GGMLType.IQ3_XXS: (256, 2 + _QK_K // 4 + _QK_K // 8),
    GGMLType.IQ1_S: (256, 2 + _QK_K // 8 + _QK_K // 16),
    GGMLType.IQ4_NL: (32, 2 + 16),
    GGMLType.IQ3_S: (256, 2 + _QK_K // 4 + _QK_K // 8 + _QK_K // 32 + 4),
    GGMLType.IQ2_S: (256, 2 + _QK_K // 4 + _QK_K // 16),
    GGMLType.IQ4_XS: (256, 2 + 2 + _QK_K // 2 + _QK_K // 64),
    GGMLType.I8: (1, 1),
    GGMLType.I16: (1, 2),
    GGMLType.I32: (1, 4),
    GGMLType.I64: (1, 8),
    GGMLType.F64: (1, 8),
    GGMLType.IQ1_M: (256, _QK_K // 8 + _QK_K // 16 + _QK_K // 32),
    GGMLType.BF16: (1, 2),
    GGMLType.TQ1_0: (256, 2 + 4 * 13),
    GGMLType.TQ2_0: (256, 2 + 64),
    GGMLType.MXFP4: (32, 1 + 16),
    GGMLType.NVFP4: (64, 4 + 32),
    GGMLType.Q1_0: (128, 2 + 16),
}

# The types Bonsai's kernels read directly; anything else is readable here but not runnable.
RUNTIME_TYPES: frozenset[GGMLType] = frozenset(
    {GGMLType.F32, GGMLType.F16, GGMLType.Q4_0, GGMLType.Q4_1, GGMLType.Q8_0, GGMLType.Q1_0}
)
