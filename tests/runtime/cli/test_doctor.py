"""`bonsai doctor`: the adapter, its memory where something reports it, and a --vram-budget to start from."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from bonsai.cli import main
from bonsai.kv.layout import STREAM_WINDOW

WHOLE_F32 = 30 * 8192 * 3 * 64 * 2 * 4  # the default model: 30 layers, 3 KV heads of 64, K and V in f32


@pytest.fixture(autouse=True)
def _shared_gpu(gpu, monkeypatch):
    from bonsai.gpu.device import Gpu

    monkeypatch.setattr(Gpu, "create", classmethod(lambda cls, *a, **k: gpu))


def doctor(monkeypatch, memory):
    monkeypatch.setattr("bonsai.gpu.memory.adapter_memory", lambda gpu: memory)
    monkeypatch.setattr("bonsai.kv.default_mode", lambda gpu: "f32")
    r = CliRunner().invoke(main, ["doctor"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def test_enough_memory_needs_no_budget(monkeypatch):
    out = doctor(monkeypatch, (64 << 30, "test"))
    assert "memory: 64.00 GiB (test)" in out and "budget: none needed" in out and "360.00 MiB" in out


def test_little_memory_suggests_a_quarter_of_it_in_whole_window_slots(monkeypatch):
    out = doctor(monkeypatch, (1 << 30, "test"))
    budget = int(re.search(r"--vram-budget (\d+)", out).group(1))
    slot = STREAM_WINDOW * 3 * 64 * 2 * 4
    assert budget % slot == 0 and budget <= (1 << 30) // 4 < budget + slot and budget < WHOLE_F32


def test_no_memory_figure_says_so_and_gives_the_cache_size(monkeypatch):
    out = doctor(monkeypatch, None)
    assert "memory: not reported" in out and "with less free GPU memory than that, set --vram-budget" in out
