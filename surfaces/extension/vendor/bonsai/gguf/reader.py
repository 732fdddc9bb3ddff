"""Parse a GGUF file (header, metadata, tensor infos) on the standard library and hand out tensor bytes."""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .constants import (
    BLOCK_SIZES,
    DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    SUPPORTED_VERSIONS,
    GGMLType,
    ValueType,
)
from .cursor import Cursor
from .errors import (
    BadMagicError,
    GGUFError,
    MissingKeyError,
    TruncatedGGUFError,
    UnknownTensorTypeError,
    UnsupportedVersionError,
)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's entry in the GGUF tensor table."""

    # Tensor name, e.g. "blk.0.attn_q.weight".
    name: str
    # Dimensions in ggml order: shape[0] is the contiguous (innermost) one. numpy shape = reversed.
    shape: tuple[int, ...]
    # ggml type of the stored blocks.
    ggml_type: GGMLType
    # Offset of the data from the start of the data section, as stored in the file.
    offset: int
    # Offset of the data from the start of the file.
    data_offset: int
    # Number of weights, product of `shape`.
    n_elements: int
    # Bytes the data occupies: n_elements / block weights * block bytes.
    n_bytes: int

    @property
    def type_name(self) -> str:
        """The ggml type's name, e.g. "Q4_1"."""
        return self.ggml_type.name


class GGUFReader:
    """A parsed GGUF file: `metadata`, `value_types`, `tensors`, `alignment`, and `tensor_data(name)`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Memory-map `path` and parse it; raises GGUFError naming the file and field on bad input."""
        self.path = str(path)
        self._mmap: mmap.mmap | None = None
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size == 0:
                    buf: Any = b""
                else:
                    try:
                        self._mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                        buf = self._mmap
                    except (OSError, ValueError):  # no mmap on this filesystem (e.g. some WASM FS)
                        buf = fh.read()
        except FileNotFoundError as exc:
            raise GGUFError(self.path, "file", "no such file") from exc
        except IsADirectoryError as exc:
            raise GGUFError(self.path, "file", "is a directory, not a GGUF file") from exc
        self._parse(memoryview(buf))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, name: str = "<memory>") -> GGUFReader:
        """Parse a GGUF image already in memory (e.g. fetched by a browser); `name` is used in errors."""
        self = cls.__new__(cls)
        self.path = name
        self._mmap = None
        self._parse(memoryview(data).cast("B"))
        return self

    # -- parsing -------------------------------------------------------------------------------

    def _parse(self, buf: memoryview) -> None:
        self._buf = buf
        cur = Cursor(buf, self.path)
        cur.field = "magic"
        magic = bytes(cur.take(4))
        if magic != GGUF_MAGIC:
            raise BadMagicError(
                self.path, "magic", f"starts with {magic!r}, not b'GGUF': this is not a GGUF model file"
            )
        cur.field = "version"
        self.version: int = cur.u32()
        if self.version not in SUPPORTED_VERSIONS:
            raise UnsupportedVersionError(
                self.path,
                "version",
                f"GGUF version {self.version} is not supported (only 2 and 3); re-convert the model"
                " with a current llama.cpp",
            )
        cur.field = "tensor_count"
        n_tensors = cur.u64()
        cur.field = "metadata_kv_count"
        n_kv = cur.u64()

        # metadata[key] -> Python value (int, float, bool, str, or list of these / nested lists).
        self.metadata: dict[str, Any] = {}
        # value_types[key] -> [type] for scalars, [ARRAY, item type, ...] for arrays (like gguf's).
        self.value_types: dict[str, list[ValueType]] = {}
        for i in range(n_kv):
            cur.field = f"metadata key #{i}"
            key = cur.string()
            cur.field = f"metadata {key!r}"
            vtype = cur._value_type(cur.u32())
            start = cur.pos
            self.metadata[key] = cur.value(vtype)
            self.value_types[key] = self._types_of(buf, start, vtype)

        self.alignment: int = DEFAULT_ALIGNMENT
        if "general.alignment" in self.metadata:
            align = self.metadata["general.alignment"]
            if (
                self.value_types["general.alignment"] != [ValueType.UINT32]
                or align <= 0
                or align & (align - 1)
            ):
                raise GGUFError(
                    self.path, "general.alignment", f"must be a power-of-two uint32, got {align!r}"
                )
            self.alignment = align

        infos: list[tuple[str, tuple[int, ...], int, int]] = []
        for i in range(n_tensors):
            cur.field = f"tensor info #{i}"
            name = cur.string()
            cur.field = f"tensor {name!r} info"
            n_dims = cur.u32()
            shape = tuple(cur.unpack(f"{n_dims}Q"))
            raw_type = cur.u32()
            offset = cur.u64()
            infos.append((name, shape, raw_type, offset))

        # The data section starts at the next multiple of the alignment after the tensor table.
        self.data_offset: int = -(-cur.pos // self.alignment) * self.alignment
        # tensors[name] -> TensorInfo, in file order.
        self.tensors: dict[str, TensorInfo] = {}
        for name, shape, raw_type, offset in infos:
            self.tensors[name] = self._tensor_info(name, shape, raw_type, offset, len(buf))

    def _types_of(self, buf: memoryview, start: int, vtype: ValueType) -> list[ValueType]:
        """The type chain of a value, gguf-package style: nested array item types follow ARRAY."""
        types = [vtype]
        pos = start
        while vtype == ValueType.ARRAY:
            vtype = ValueType(struct.unpack_from("<I", buf, pos)[0])
            types.append(vtype)
            pos += 12
            count = struct.unpack_from("<Q", buf, pos - 8)[0]
            if vtype != ValueType.ARRAY or count == 0:
                break
        return types

    def _tensor_info(
        self, name: str, shape: tuple[int, ...], raw_type: int, offset: int, file_size: int
    ) -> TensorInfo:
        try:
            ggml_type = GGMLType(raw_type)
        except ValueError:
            raise UnknownTensorTypeError(
                self.path,
                f"tensor {name!r}",
                f"unknown ggml tensor type id {raw_type}; known: "
                + ", ".join(f"{t.name}={t.value}" for t in GGMLType),
            ) from None
        n_elements = 1
        for d in shape:
            n_elements *= d
        block_weights, block_bytes = BLOCK_SIZES[ggml_type]
        if shape and shape[0] % block_weights:
            raise GGUFError(
                self.path,
                f"tensor {name!r}",
                f"row length {shape[0]} is not a multiple of the {ggml_type.name} block size {block_weights}",
            )
        n_bytes = n_elements // block_weights * block_bytes
        data_offset = self.data_offset + offset
        if data_offset + n_bytes > file_size:
            raise TruncatedGGUFError(
                self.path,
                f"tensor {name!r}",
                f"data spans bytes {data_offset}..{data_offset + n_bytes} but the file has {file_size}"
                " (the file is truncated; download it again)",
            )
        return TensorInfo(name, shape, ggml_type, offset, data_offset, n_elements, n_bytes)

    # -- access --------------------------------------------------------------------------------

    def tensor_data(self, name: str) -> memoryview:
        """The raw bytes of tensor `name` (a read-only memoryview into the mapped file, no copy)."""
        info = self.tensor(name)
        return self._buf[info.data_offset : info.data_offset + info.n_bytes]

    def tensor(self, name: str) -> TensorInfo:
        """The TensorInfo of `name`; GGUFError naming the tensor when the file lacks it."""
        try:
            return self.tensors[name]
        except KeyError:
            raise GGUFError(self.path, f"tensor {name!r}", "not in this file") from None

    def get(self, key: str, default: Any = None) -> Any:
        """Metadata value of `key`, or `default` when absent."""
        return self.metadata.get(key, default)

    def require(self, key: str, kind: type | tuple[type, ...] | None = None) -> Any:
        """Metadata value of `key`; MissingKeyError naming it when absent or not of type `kind`."""
        if key not in self.metadata:
            raise MissingKeyError(self.path, key, "required metadata key is missing")
        value = self.metadata[key]
        if kind is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            raise MissingKeyError(
                self.path, key, f"expected {getattr(kind, '__name__', kind)}, found {type(value).__name__}"
            )
        return value

    def close(self) -> None:
        """Release the memory map (tensor views handed out must be released first)."""
        try:
            self._buf.release()
        except BufferError:  # views were exported from it; they keep the buffer alive
            pass
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:  # a caller still holds a tensor view; the map dies with it
                pass
            self._mmap = None

    def __enter__(self) -> GGUFReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_gguf(path: str | os.PathLike[str] | Path) -> GGUFReader:
    """Open and parse a GGUF file (alias for `GGUFReader(path)`)."""
    return GGUFReader(path)
