"""`bonsai info` describes a GGUF model and rejects a bad file with a one-line error, no traceback."""

from __future__ import annotations

import json

from click.testing import CliRunner

from bonsai.cli import main
from tests.helpers.synthetic import write_tiny_gguf


def test_info_on_the_default_model():
    result = CliRunner().invoke(main, ["info"])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(":", 1) for line in result.output.splitlines())
    assert lines["architecture"].strip() == "llama"
    assert lines["layers"].strip() == "30"
    assert lines["heads"].strip() == "9 query, 3 key/value, head_dim 64"
    assert lines["tensors"].strip() == "272 (Q4_1 210, F32 61, Q8_0 1)"
    assert lines["tied output"].strip() == "yes"
    assert "49152 tokens, 48900 merges" in lines["tokenizer"]
    assert lines["chat template"].strip().startswith("present")


def test_info_json_on_a_synthetic_qwen3(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", "qwen3", weight_type="Q1_0", dim=128, embed_type="Q8_0")
    result = CliRunner().invoke(main, ["info", str(path), "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    assert d["config"]["arch"] == "qwen3" and d["config"]["qk_norm"] is True
    assert d["tensor_types"] == {"Q1_0": 14, "F32": 9, "Q8_0": 1}
    assert d["tokenizer"]["pre"] == "qwen2" and d["tokenizer"]["eos"] == [2, "<|im_end|>"]


def test_info_on_a_bad_file_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGML" + bytes(60))
    result = CliRunner().invoke(main, ["info", str(bad)])
    assert result.exit_code == 2
    assert result.output == (
        f"bonsai: error: {bad}: magic: starts with b'GGML', not b'GGUF': this is not a GGUF model file\n"
    )


def test_info_on_a_truncated_model_names_the_tensor(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", "llama")
    data = path.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 100])
    result = CliRunner().invoke(main, ["info", str(cut)])
    assert result.exit_code == 2
    assert result.output.startswith(f"bonsai: error: {cut}: tensor 'output_norm.weight': data spans bytes")


def test_info_on_an_unsupported_architecture(tmp_path):
    import gguf

    w = gguf.GGUFWriter(tmp_path / "rwkv.gguf", "rwkv6")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    result = CliRunner().invoke(main, ["info", str(tmp_path / "rwkv.gguf")])
    assert result.exit_code == 2
    assert result.output == (
        f"bonsai: error: {tmp_path / 'rwkv.gguf'}: general.architecture: architecture 'rwkv6' is not "
        "supported; Bonsai runs llama, qwen3\n"
    )
