"""`bonsai run`, `bonsai chat` and `bonsai eval` through click's CliRunner; bad models exit 2 with a named error."""

from __future__ import annotations

import json
import math

import gguf
import numpy as np
import pytest
from click.testing import CliRunner

from bonsai.cli import main
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)  # see test_synthetic_models


@pytest.fixture(autouse=True)
def _session_gpu(gpu, monkeypatch):
    """Commands open their device with Gpu.create(); hand them the shared one (compiled pipelines kept)."""
    from bonsai.gpu.device import Gpu

    monkeypatch.setattr(Gpu, "create", classmethod(lambda cls, *a, **k: gpu))


def _invoke(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_run_greedy_streams_paris_and_reports_speed_on_stderr():
    r = _invoke("run", "The capital of France is", "--max-tokens", "2")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(" Paris")
    assert "tok/s" in r.stderr and "loading weights" in r.stderr


def test_chat_answers_in_the_chat_template_and_quits_on_eof(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", "qwen3", **TINY)
    r = _invoke("chat", "--model", str(path), "--max-tokens", "3", input="Hello\n")
    assert r.exit_code == 0, r.output
    assert "prompt tokens" in r.stderr and r.stderr.count(">>> ") == 2


def test_eval_json_gives_logprob_and_argmax_per_position(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("The capital of France is Paris. The quick brown fox", encoding="utf-8")
    model = write_tiny_gguf(tmp_path / "tiny.gguf", "llama", weight_type="Q4_1", **TINY)
    r = _invoke("eval", str(text), "--model", str(model), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    lps = [p["logprob"] for p in out["positions"]]
    assert out["scored"] == out["tokens"] - 1 == len(lps) and all(lp <= 0 for lp in lps)
    assert math.isclose(out["perplexity"], math.exp(-np.mean(lps)), rel_tol=1e-12)
    assert all(0 <= p["argmax"] < 400 for p in out["positions"])


def test_unsupported_architecture_is_a_named_error_exit_2(tmp_path):
    path = tmp_path / "gpt2.gguf"
    w = gguf.GGUFWriter(str(path), "gpt2")
    w.add_tensor("token_embd.weight", np.zeros((4, 32), np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()  # noqa: E702
    r = CliRunner().invoke(main, ["run", "hi", "--model", str(path)])
    assert r.exit_code == 2 and "gpt2" in r.stderr and "Traceback" not in r.output


@pytest.mark.parametrize("wtype", ["Q5_0"])
def test_unsupported_tensor_type_is_a_named_error_exit_2(tmp_path, wtype):
    path = write_tiny_gguf(tmp_path / "q5.gguf", "llama", weight_type=wtype, embed_type="Q8_0", **TINY)
    r = CliRunner().invoke(main, ["run", "hi", "--model", str(path)])
    assert r.exit_code == 2 and wtype in r.stderr and "blk.0" in r.stderr, r.output


def test_run_says_what_a_vram_budget_leaves_on_the_gpu_and_warns_when_decode_must_stream(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", "qwen3", **TINY)
    common = ("run", "--model", str(path), "--kv", "f32", "--window", "64", "--max-positions", "512",
              "--max-tokens", "2", "hello")
    r = _invoke(*common)
    assert r.exit_code == 0, r.output
    assert "KV cache: " in r.stderr and "16 of 16 windows of 64 positions" in r.stderr and "warning" not in r.stderr
    slot = 64 * 2 * 64 * 4  # positions x (K and V) x head_dim x f32 bytes, one KV head
    r = _invoke(*common, "--vram-budget", str(3 * slot))
    assert r.exit_code == 0, r.output
    assert "3 of 16 windows" in r.stderr and r.stderr.count("warning: a decode step at full context streams") == 1
