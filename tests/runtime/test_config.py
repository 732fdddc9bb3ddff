"""ModelConfig reads the hyperparameters from GGUF metadata and rejects what Bonsai cannot run, by name."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from bonsai.config import (
    ModelConfig,
    TensorShapeError,
    UnsupportedArchitectureError,
    UnsupportedTensorTypeError,
    check_tensors,
    expected_shapes,
)
from bonsai.gguf import GGUFReader, MissingKeyError
from bonsai.models import default_model_path


def test_default_model_config():
    reader = GGUFReader(default_model_path())
    cfg = ModelConfig.from_gguf(reader)
    assert (cfg.arch, cfg.n_layers, cfg.dim, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim) == (
        "llama",
        30,
        576,
        9,
        3,
        64,
    )
    assert (cfg.ffn_dim, cfg.vocab_size, cfg.context_length) == (1536, 49152, 8192)
    assert cfg.rope_theta == 100000.0 and not cfg.rope_neox and not cfg.qk_norm
    assert abs(cfg.rms_eps - 1e-5) < 1e-9
    assert cfg.tied_output and (cfg.bos_id, cfg.eos_id) == (1, 2)
    check_tensors(reader, cfg)
    assert set(expected_shapes(cfg)) == set(reader.tensors)


def _write(path, arch, **extra):
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(1)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_feed_forward_length(128)
    w.add_context_length(256)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(300)
    for key, value in extra.items():
        w.add_uint32(f"{arch}.{key}", value)
    w.add_tensor("token_embd.weight", np.zeros((300, 64), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return GGUFReader(path)


def test_qwen3_reads_head_dim_from_key_length_and_uses_neox_and_qk_norm(tmp_path):
    cfg = ModelConfig.from_gguf(_write(tmp_path / "q.gguf", "qwen3", **{"attention.key_length": 32}))
    assert cfg.arch == "qwen3" and cfg.head_dim == 32 and cfg.q_dim == 128 and cfg.kv_dim == 64
    assert cfg.rope_neox and cfg.qk_norm and cfg.rope_theta == 10000.0
    assert cfg.bos_id is None and cfg.eos_id is None


def test_unsupported_architecture_is_named(tmp_path):
    reader = _write(tmp_path / "m.gguf", "mamba")
    with pytest.raises(
        UnsupportedArchitectureError, match=r"m\.gguf: general\.architecture: architecture 'mamba'"
    ):
        ModelConfig.from_gguf(reader)


def test_missing_hyperparameter_is_named(tmp_path):
    w = gguf.GGUFWriter(tmp_path / "x.gguf", "llama")
    w.add_block_count(1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(
        MissingKeyError, match=r"x\.gguf: llama\.embedding_length: required metadata key is missing"
    ):
        ModelConfig.from_gguf(GGUFReader(tmp_path / "x.gguf"))


def test_missing_tensor_and_unsupported_tensor_type_are_named(tmp_path):
    reader = _write(tmp_path / "l.gguf", "llama")
    cfg = ModelConfig.from_gguf(reader)
    with pytest.raises(TensorShapeError, match=r"tensor 'output_norm\.weight': missing"):
        check_tensors(reader, cfg)

    w = gguf.GGUFWriter(tmp_path / "k.gguf", "llama")
    # one Q4_K block (256 weights, 144 bytes) per row
    w.add_tensor(
        "token_embd.weight", np.zeros((300, 144), np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q4_K
    )
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    k_reader = GGUFReader(tmp_path / "k.gguf")
    cfg256 = ModelConfig(**{**cfg.__dict__, "dim": 256})
    with pytest.raises(
        UnsupportedTensorTypeError, match=r"tensor 'token_embd\.weight': type Q4_K is not supported"
    ):
        check_tensors(k_reader, cfg256)


def test_partial_rope_and_rope_scaling_are_refused_by_name(tmp_path):
    from bonsai.gguf import GGUFError

    with pytest.raises(GGUFError, match=r"llama\.rope\.dimension_count: partial RoPE \(8 of 16 dims\)"):
        ModelConfig.from_gguf(_write(tmp_path / "p.gguf", "llama", **{"rope.dimension_count": 8}))
    w = gguf.GGUFWriter(tmp_path / "s.gguf", "llama")
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    for key, value in {"block_count": 1, "embedding_length": 64, "attention.head_count": 4}.items():
        w.add_uint32(f"llama.{key}", value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(GGUFError, match=r"llama\.rope\.scaling\.type: RoPE scaling 'yarn' is not supported"):
        ModelConfig.from_gguf(GGUFReader(tmp_path / "s.gguf"))
