"""Read GGUF model files on the standard library alone (struct, mmap, memoryview; no numpy).

The browser surface runs this under Pyodide, so nothing here may import numpy or `gguf`.

API:
    reader = GGUFReader(path)            # or GGUFReader.from_bytes(data, name="model.gguf")
    reader.version                       # 2 or 3
    reader.metadata["llama.block_count"] # every key -> int | float | bool | str | list (nested ok)
    reader.value_types[key]              # [ValueType, ...]: scalar type, or ARRAY + item type(s)
    reader.get(key, default)             # metadata value or default
    reader.require(key, int)             # value, or MissingKeyError naming file and key
    reader.alignment                     # general.alignment or 32
    reader.data_offset                   # file offset of the tensor data section
    reader.tensors                       # {name: TensorInfo} in file order
    info = reader.tensor("blk.0.attn_q.weight")
    info.shape        # ggml order (shape[0] contiguous); numpy shape is tuple(reversed(shape))
    info.ggml_type    # GGMLType (info.type_name -> "Q4_1")
    info.offset, info.data_offset, info.n_elements, info.n_bytes
    reader.tensor_data(name)             # read-only memoryview of the raw blocks (no copy)
    reader.close()  /  with GGUFReader(path) as reader: ...

Block sizes: BLOCK_SIZES[GGMLType.Q4_1] == (32, 20) (weights, bytes per block), for every ggml type;
RUNTIME_TYPES is the set Bonsai's kernels run (F32, F16, Q4_0, Q4_1, Q8_0, Q1_0). Q1_0 is ggml's
type id 41: 128 weights per 18-byte block, f16 scale d then 16 bytes of sign bits (see GGMLType).

Errors are GGUFError (a BonsaiError) subclasses carrying `.path` and `.field`: TruncatedGGUFError,
BadMagicError, UnsupportedVersionError, UnknownTensorTypeError, MissingKeyError.
"""

from .constants import BLOCK_SIZES, RUNTIME_TYPES, GGMLType, ValueType
from .errors import (
    BadMagicError,
    GGUFError,
    MissingKeyError,
    TruncatedGGUFError,
    UnknownTensorTypeError,
    UnsupportedVersionError,
)
from .reader import GGUFReader, TensorInfo, open_gguf

__all__ = [
    "BLOCK_SIZES",
    "RUNTIME_TYPES",
    "BadMagicError",
    "GGMLType",
    "GGUFError",
    "GGUFReader",
    "MissingKeyError",
    "TensorInfo",
    "TruncatedGGUFError",
    "UnknownTensorTypeError",
    "UnsupportedVersionError",
    "ValueType",
    "open_gguf",
]
