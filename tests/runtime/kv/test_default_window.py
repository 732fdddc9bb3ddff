"""The default window (`kv.layout.default_window`): the whole context in one window on a GPU whose cache is wholly
resident, 2048 positions under a VRAM budget and on CPU adapters; the tokens are those of any window (windowed
attention is bit-identical to whole-cache attention)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bonsai.engine.native import load_engine
from bonsai.kv.format.modes import get_mode
from bonsai.kv.layout import STREAM_WINDOW, Layout, default_window
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256)
BIG = 1 << 40  # a binding limit nothing reaches


def _window(mode: str, max_positions: int, *, cpu: bool = False, budget: bool = False, limit: int = BIG) -> int:
    return default_window(get_mode(mode), 3, 64, max_positions, cpu=cpu, budget=budget, max_binding_bytes=limit)


def test_one_window_holds_the_context_on_a_gpu_without_a_budget():
    assert _window("f32", 8000) == 8000 and _window("q4res", 8192) == 8192
    assert _window("q4res", 8100) == 8128  # a multiple of 64: every grouped mode's group divides it
    assert _window("f32", 96) == 128


def test_a_budget_or_a_cpu_adapter_keeps_2048_position_windows():
    assert _window("f32", 8192, budget=True) == STREAM_WINDOW == 2048
    assert _window("q4res", 8192, cpu=True) == STREAM_WINDOW


@pytest.mark.parametrize("mode", ["f32", "q4res"])
def test_the_window_is_halved_until_its_slot_fits_one_binding(mode):
    whole = Layout(get_mode(mode), 1, 3, 64, 32768, 32768).slot_bytes
    window = _window(mode, 32768, limit=whole // 3)
    assert window == 8192 and Layout(get_mode(mode), 1, 3, 64, 32768, window).slot_bytes <= whole // 3
    assert _window(mode, 32768, limit=1) == STREAM_WINDOW  # never below the streaming window


def test_an_engine_on_a_gpu_takes_one_window_and_decodes_the_tokens_of_small_ones(gpu, tmp_path, monkeypatch):
    from bonsai.gpu.recorder import Recorder

    monkeypatch.setattr(Recorder, "is_cpu", property(lambda self: False))
    path = write_tiny_gguf(tmp_path / "t.gguf", "llama", **TINY)
    whole = load_engine(path, gpu=gpu, kv="q4res", max_positions=200, progress=False)
    assert whole.window == 256 and whole.cache.layout.n_windows == 1
    prompt = [(7 * i) % 200 + 3 for i in range(150)]
    small = load_engine(path, gpu=gpu, kv="q4res", window=64, max_positions=200, progress=False)
    assert whole.generate(prompt, max_tokens=12).tokens == small.generate(prompt, max_tokens=12).tokens
    whole.use_cache(kv="f32")  # a new cache keeps choosing: the default window of the new mode
    assert whole.window == 256
    budget = load_engine(path, gpu=gpu, kv="q4res", max_positions=200, vram_budget=1 << 20, progress=False)
    assert budget.window == STREAM_WINDOW


def test_the_cli_says_what_the_default_window_is():
    from bonsai.cli import main

    text = " ".join(CliRunner().invoke(main, ["run", "--help"]).output.split())
    assert "Default: the whole context on a GPU with the cache resident; 2048 under" in text  # (click wraps the rest)
    assert "or on a CPU adapter" in text
