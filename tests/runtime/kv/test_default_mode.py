"""`--kv auto`, the CLI's default: q4res on GPUs (it decodes at 0.9x f32's speed or better), f32 on CPU adapters
(bonsai.kv.default_mode)."""

from __future__ import annotations

from types import SimpleNamespace

from click.testing import CliRunner

from bonsai.engine.native import load_engine
from bonsai.kv import AUTO, default_mode, resolve_mode
from tests.helpers.synthetic import write_tiny_gguf


def test_auto_is_q4res_on_a_gpu_and_f32_on_a_cpu_adapter():
    assert default_mode(SimpleNamespace(is_cpu=False)) == "q4res"
    assert default_mode(SimpleNamespace(is_cpu=True)) == "f32"
    assert resolve_mode("q8", SimpleNamespace(is_cpu=False)) == "q8"  # an explicit mode is kept
    assert resolve_mode(AUTO, SimpleNamespace(is_cpu=True)) == "f32"


def test_an_engine_asked_for_auto_runs_the_adapters_mode(gpu, tmp_path):
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)
    engine = load_engine(path, gpu=gpu, kv=AUTO, progress=False)
    assert engine.kv_mode == default_mode(gpu) and engine.cache.layout.mode.name == engine.kv_mode
    engine.use_cache(kv=AUTO, window=64)
    assert engine.cache.layout.mode.name == default_mode(gpu)


def test_an_engine_asked_for_auto_on_a_gpu_keeps_a_q4res_cache(gpu, tmp_path, monkeypatch):
    from bonsai.gpu.recorder import Recorder

    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)
    engine = load_engine(path, gpu=gpu, kv=AUTO, window=64, max_positions=128, progress=False)
    assert engine.cache.layout.mode.name == "q4res" and engine.generate([3, 1, 4], max_tokens=4).tokens
    # the library's default too (the tenant and OS surfaces load engines without naming a mode)
    assert load_engine(path, gpu=gpu, window=64, max_positions=128, progress=False).kv_mode == "q4res"


def test_the_cli_defaults_to_auto_and_says_what_it_means():
    from bonsai.cli import main

    out = CliRunner().invoke(main, ["run", "--help"]).output
    text = " ".join(out.split())
    assert "[default: auto]" in out and "auto = the adapter's default: q4res on a GPU" in text and "f32 on a CPU" in text
