"""The stdlib GGUF reader agrees with the `gguf` package (the oracle) and names the file and field on bad input."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from bonsai.errors import BonsaiError
from bonsai.gguf import (
    BLOCK_SIZES,
    BadMagicError,
    GGMLType,
    GGUFError,
    GGUFReader,
    MissingKeyError,
    TruncatedGGUFError,
    UnknownTensorTypeError,
    UnsupportedVersionError,
    ValueType,
)
from bonsai.models import default_model_path


def oracle_value(field: gguf.ReaderField):
    """A metadata value as the gguf package reads it, in plain Python types."""
    value = field.contents()
    return value.tolist() if isinstance(value, np.ndarray) else value


def assert_matches_oracle(path: Path) -> None:
    ours = GGUFReader(path)
    theirs = gguf.GGUFReader(path)
    keys = [k for k in theirs.fields if not k.startswith("GGUF.")]
    assert list(ours.metadata) == keys
    for key in keys:
        field = theirs.fields[key]
        assert ours.metadata[key] == oracle_value(field), key
        assert [t.value for t in ours.value_types[key]] == [t.value for t in field.types], key
    assert ours.version == int(theirs.fields["GGUF.version"].parts[-1][0])
    assert ours.alignment == theirs.alignment
    assert ours.data_offset == theirs.data_offset
    assert list(ours.tensors) == [t.name for t in theirs.tensors]
    for t in theirs.tensors:
        info = ours.tensors[t.name]
        assert info.shape == tuple(int(d) for d in t.shape), t.name
        assert info.ggml_type.value == t.tensor_type.value, t.name
        assert info.data_offset == t.data_offset, t.name
        assert info.n_elements == t.n_elements, t.name
        assert info.n_bytes == t.n_bytes, t.name
        assert ours.tensor_data(t.name) == t.data.tobytes(), t.name


def test_default_model_matches_gguf_package_metadata_and_every_tensor_byte():
    assert_matches_oracle(default_model_path())


def write_small(path: Path, *, alignment: int | None = None, tensor_types=None) -> Path:
    """A small GGUF with every metadata value type and one tensor per runtime type."""
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(path, "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000)
    w.add_int32("t.i32", -2_000_000_000)
    w.add_float32("t.f32", 0.1)
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", 1 / 3)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo ✓ 🌳")
    w.add_array("t.arr_str", ["a", "", "ü", "<|im_start|>"])
    w.add_array("t.arr_i32", [1, -2, 3])
    w.add_array("t.arr_f32", [0.5, -1.25])
    w.add_array("t.arr_bool", [True, False, True])
    w.add_key_value("t.arr_u8", [1, 2, 255], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.UINT8)
    w.add_key_value("t.arr_u64", [0, 2**64 - 1], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.UINT64)
    w.add_key_value("t.arr_f64", [1e300, -2.5], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.FLOAT64)
    for gtype in tensor_types or [
        GGMLType.F32,
        GGMLType.F16,
        GGMLType.Q4_0,
        GGMLType.Q4_1,
        GGMLType.Q8_0,
        GGMLType.Q1_0,
    ]:
        block_w, block_b = BLOCK_SIZES[gtype]
        rows, cols = 3, 256
        n_blocks = rows * cols // block_w
        raw = rng.integers(0, 256, size=(rows, cols // block_w * block_b), dtype=np.uint8)
        assert raw.size == n_blocks * block_b
        if gtype == GGMLType.F32:
            w.add_tensor(f"w.{gtype.name}", rng.standard_normal((rows, cols), dtype=np.float32))
        elif gtype == GGMLType.F16:
            w.add_tensor(f"w.{gtype.name}", rng.standard_normal((rows, cols)).astype(np.float16))
        else:
            w.add_tensor(f"w.{gtype.name}", raw, raw_dtype=gguf.GGMLQuantizationType(gtype.value))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_small_file_with_every_value_type_and_tensor_type_matches_oracle(tmp_path):
    assert_matches_oracle(write_small(tmp_path / "small.gguf"))


def test_custom_alignment_is_honoured(tmp_path):
    path = write_small(tmp_path / "aligned.gguf", alignment=64)
    reader = GGUFReader(path)
    assert reader.alignment == 64
    assert all(info.offset % 64 == 0 for info in reader.tensors.values())
    assert_matches_oracle(path)


def test_values_come_back_as_written(tmp_path):
    r = GGUFReader(write_small(tmp_path / "small.gguf"))
    assert r.metadata["t.u64"] == 2**63 + 5
    assert r.metadata["t.i64"] == -(2**62)
    assert r.metadata["t.f32"] == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert r.metadata["t.f64"] == 1 / 3
    assert r.metadata["t.bool"] is True
    assert r.metadata["t.str"] == "héllo ✓ 🌳"
    assert r.metadata["t.arr_str"] == ["a", "", "ü", "<|im_start|>"]
    assert r.metadata["t.arr_bool"] == [True, False, True]
    assert r.value_types["t.arr_u8"] == [ValueType.ARRAY, ValueType.UINT8]
    assert r.get("absent", 7) == 7
    assert r.require("t.u8", int) == 200


def test_q1_0_byte_size_is_18_bytes_per_128_weights(tmp_path):
    r = GGUFReader(write_small(tmp_path / "small.gguf"))
    info = r.tensor("w.Q1_0")
    assert info.ggml_type == GGMLType.Q1_0 and info.shape == (256, 3)
    assert info.n_bytes == 3 * 2 * 18


def test_nested_arrays_are_read(tmp_path):
    w = gguf.GGUFWriter(tmp_path / "nested.gguf", "llama")
    w.add_array("t.nested", [[1, 2], [3]])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    r = GGUFReader(tmp_path / "nested.gguf")
    assert r.metadata["t.nested"] == [[1, 2], [3]]
    assert r.value_types["t.nested"][:2] == [ValueType.ARRAY, ValueType.ARRAY]


def test_from_bytes_equals_file_reading(tmp_path):
    path = write_small(tmp_path / "small.gguf")
    a, b = GGUFReader(path), GGUFReader.from_bytes(path.read_bytes(), name="small.gguf")
    assert a.metadata == b.metadata and a.tensors == b.tensors
    assert all(a.tensor_data(n) == b.tensor_data(n) for n in a.tensors)


def test_model_input_modules_import_no_numpy_gguf_or_regex():
    """The browser surface (Pyodide) has neither numpy nor `regex`; these modules must not need them."""
    import subprocess

    code = (
        "import sys, bonsai.gguf, bonsai.config, bonsai.tokenizer, bonsai.tokenizer.chat_template\n"
        "bad = [m for m in ('numpy', 'gguf', 'regex') if m in sys.modules]\n"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- errors ----------------------------------------------------------------------------------------


def test_error_types_are_bonsai_errors():
    assert issubclass(GGUFError, BonsaiError)
    for cls in (TruncatedGGUFError, BadMagicError, UnsupportedVersionError, UnknownTensorTypeError):
        assert issubclass(cls, GGUFError)


@pytest.mark.parametrize(
    ("cut", "field"),
    [
        (0, "magic"),
        (2, "magic"),
        (6, "version"),
        (10, "tensor_count"),
        (30, "metadata"),
    ],
)
def test_truncated_header_names_file_and_field(tmp_path, cut, field):
    path = write_small(tmp_path / "small.gguf")
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(TruncatedGGUFError) as err:
        GGUFReader(bad)
    assert err.value.path == str(bad) and field in err.value.field
    assert str(bad) in str(err.value) and "truncated" in str(err.value)


def test_every_truncation_point_in_the_header_is_a_named_error(tmp_path):
    data = write_small(tmp_path / "small.gguf").read_bytes()
    header_end = GGUFReader(tmp_path / "small.gguf").data_offset
    bad = tmp_path / "cut.gguf"
    for cut in range(0, header_end, 7):
        bad.write_bytes(data[:cut])
        with pytest.raises(TruncatedGGUFError) as err:
            GGUFReader(bad)
        assert err.value.field, cut


def test_truncated_tensor_data_names_the_tensor(tmp_path):
    path = write_small(tmp_path / "small.gguf")
    reader = GGUFReader(path)
    last = list(reader.tensors.values())[-1]
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(path.read_bytes()[: last.data_offset + last.n_bytes - 1])
    with pytest.raises(TruncatedGGUFError) as err:
        GGUFReader(bad)
    assert err.value.field == f"tensor {last.name!r}"


def test_truncated_default_model_names_a_tensor(tmp_path):
    bad = tmp_path / "cut.gguf"
    with open(default_model_path(), "rb") as src:
        bad.write_bytes(src.read(40_000_000))
    with pytest.raises(TruncatedGGUFError, match=r"cut\.gguf: tensor 'blk\.\d+\.") as err:
        GGUFReader(bad)
    assert "truncated" in str(err.value)


def test_bad_magic(tmp_path):
    path = write_small(tmp_path / "small.gguf")
    data = bytearray(path.read_bytes())
    data[:4] = b"GGML"
    path.write_bytes(bytes(data))
    with pytest.raises(BadMagicError, match=r"small\.gguf: magic: starts with b'GGML'.*not a GGUF"):
        GGUFReader(path)


def test_unsupported_version(tmp_path):
    path = write_small(tmp_path / "small.gguf")
    data = bytearray(path.read_bytes())
    data[4:8] = struct.pack("<I", 4)
    path.write_bytes(bytes(data))
    with pytest.raises(UnsupportedVersionError, match=r"small\.gguf: version: GGUF version 4"):
        GGUFReader(path)


def _tensor_type_position(data: bytes, name: str, n_dims: int) -> int:
    """Byte offset of a tensor's ggml type id, found independently of the reader under test."""
    key = struct.pack("<Q", len(name)) + name.encode()
    at = data.index(key) + len(key)
    assert struct.unpack_from("<I", data, at)[0] == n_dims
    return at + 4 + 8 * n_dims


def test_unknown_tensor_type_names_the_tensor(tmp_path):
    path = write_small(tmp_path / "small.gguf")
    data = bytearray(path.read_bytes())
    pos = _tensor_type_position(bytes(data), "w.Q8_0", 2)
    assert struct.unpack_from("<I", data, pos)[0] == GGMLType.Q8_0
    data[pos : pos + 4] = struct.pack("<I", 99)
    path.write_bytes(bytes(data))
    with pytest.raises(
        UnknownTensorTypeError, match=r"small\.gguf: tensor 'w\.Q8_0': unknown ggml tensor type id 99"
    ):
        GGUFReader(path)


def test_tensor_offset_beyond_eof_names_the_tensor(tmp_path):
    path = write_small(tmp_path / "small.gguf")
    data = bytearray(path.read_bytes())
    pos = _tensor_type_position(bytes(data), "w.F16", 2) + 4
    data[pos : pos + 8] = struct.pack("<Q", 10**9)
    path.write_bytes(bytes(data))
    with pytest.raises(TruncatedGGUFError, match=r"tensor 'w\.F16': data spans bytes"):
        GGUFReader(path)


def test_missing_file_and_missing_key_name_the_file(tmp_path):
    with pytest.raises(GGUFError, match=r"nope\.gguf: file: no such file"):
        GGUFReader(tmp_path / "nope.gguf")
    r = GGUFReader(write_small(tmp_path / "small.gguf"))
    with pytest.raises(
        MissingKeyError, match=r"small\.gguf: llama\.block_count: required metadata key is missing"
    ):
        r.require("llama.block_count")
    with pytest.raises(MissingKeyError, match=r"t\.str: expected int, found str"):
        r.require("t.str", int)
    with pytest.raises(GGUFError, match=r"tensor 'absent': not in this file"):
        r.tensor_data("absent")


def test_oracle_comparison_catches_a_wrong_block_size(tmp_path, monkeypatch):
    """Mutation: a reader with Q1_0 at 20 bytes per block must fail the oracle comparison."""
    import bonsai.gguf.reader as reader_module

    path = write_small(tmp_path / "small.gguf")
    sizes = dict(reader_module.BLOCK_SIZES)
    sizes[GGMLType.Q1_0] = (128, 20)
    monkeypatch.setattr(reader_module, "BLOCK_SIZES", sizes)
    with pytest.raises(AssertionError):
        assert_matches_oracle(path)


def test_falls_back_to_reading_when_mmap_is_unavailable(tmp_path, monkeypatch):
    import mmap

    import bonsai.gguf.reader as reader_module

    def no_mmap(*args, **kwargs):
        raise OSError("mmap not supported here")

    path = write_small(tmp_path / "small.gguf")
    expected = GGUFReader(path)
    monkeypatch.setattr(reader_module.mmap, "mmap", no_mmap)
    r = GGUFReader(path)
    assert r._mmap is None and r.metadata == expected.metadata
    assert all(r.tensor_data(n) == expected.tensor_data(n) for n in r.tensors)
    assert mmap.mmap is no_mmap  # the patch really applied to the module the reader uses
