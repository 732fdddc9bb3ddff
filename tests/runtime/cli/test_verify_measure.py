"""`bonsai verify attention` and `bonsai measure kv4`: outputs, exit codes, and the too-clean guard."""

from __future__ import annotations

import dataclasses
import functools
import json
import re

import pytest
from click.testing import CliRunner

from bonsai.cli import main
from bonsai.diagnostics import exactness, measure
from bonsai.diagnostics.measure import TooCleanError, check_not_too_clean, synthetic
from bonsai.kv.attention import driver as attention
from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256, tied=False)  # head_dim 64: shared kernels


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    """A tiny synthetic GGUF: `verify model`'s checks do not need the real model's weights."""
    return str(write_tiny_gguf(tmp_path_factory.mktemp("verify") / "tiny.gguf", "llama", weight_type="Q4_1", **TINY))


def test_verify_attention_passes_and_lists_every_mutation(gpu, monkeypatch):
    # the long cases, shortened to one past the serial kernel's per-dispatch span (test_long_attention
    # runs the real ones): the command must run them through the same cut
    monkeypatch.setattr(exactness, "long_cases", lambda: [exactness.Case(9, 3, 64, "f32", 1001, 2)])
    result = CliRunner().invoke(main, ["verify", "attention", "--kv-len", "12", "--prefill", "4"])
    assert result.exit_code == 0, result.output
    assert "attention: all checks passed" in result.output
    assert "ok   f32 heads 9/3 hd 64 kv 1001 prefill2: bits equal" in result.output
    assert "one fold dispatch covers at most" in result.output
    for name in ("drop_boundary", "overlap", "normalise_each_window", "pos_base_zero", "gqa_modulo",
                 "causal_plus_one"):
        assert f"ok   mutation {name}: caught" in result.output


def test_verify_attention_exits_1_when_windows_drop_positions(gpu, monkeypatch):
    broken = functools.partial(attention.split, mutations=attention.Mutations(drop_boundary=True))
    monkeypatch.setattr(exactness, "split", lambda n, w, mutations=None: broken(n, w))
    result = CliRunner().invoke(main, ["verify", "attention", "--kv-len", "8", "--prefill", "2", "--no-long"])
    assert result.exit_code == 1
    assert "FAIL f32 heads 4/4 hd 64 kv 8 decode: bits differ at window sizes" in result.output


def test_verify_model_force_decodes_on_this_device_and_exits_0(gpu, tiny):
    # short and on a tiny model here (the real model's 1,100 tokens run in
    # tests/runtime/engine/test_long_forced_decoding.py): 70 tokens in 64-position windows fill one
    # q4res group, so its quantised path is compared too
    result = CliRunner().invoke(main, ["verify", "model", "--model", tiny, "--tokens", "70", "--kv", "q4res",
                                       "--window", "64"])
    assert result.exit_code == 0, result.output
    assert "ok   kv q4res  window    64: 70 tokens, argmax agreement" in result.output
    assert result.output.rstrip().endswith("model: all checks passed")


def test_verify_model_exits_1_when_attention_drops_positions(gpu, tiny, monkeypatch):
    real = attention.Attention.pieces
    monkeypatch.setattr(attention.Attention, "pieces", lambda self, wins, n_q: [
        dataclasses.replace(w, end=min(w.end, w.start + 20)) for w in real(self, wins, n_q)])
    result = CliRunner().invoke(main, ["verify", "model", "--model", tiny, "--tokens", "40", "--kv", "f32",
                                       "--window", "2048"])
    assert result.exit_code == 1, result.output
    assert "FAIL kv f32    window  2048: 40 tokens" in result.output
    first_bad = int(re.search(r"first \|Δ\| > 0.01 at (\d+)", result.output).group(1))
    assert first_bad > 20, result.output  # positions that see at most 20 earlier ones are still right


def test_verify_model_names_an_unknown_kv_mode_before_loading_anything():
    result = CliRunner().invoke(main, ["verify", "model", "--kv", "q5"])
    assert result.exit_code == 2 and "KV mode must be one of" in result.output


def test_synthetic_error_changes_with_context_length():
    rows = synthetic((16, 64, 256))
    check_not_too_clean(rows)
    assert {r.pos_base for r in rows} == {15, 63, 255}
    assert len({r.max_abs for r in rows if r.mode == "q4"}) == 3


def test_a_query_stuck_at_pos_base_0_is_refused_as_too_clean():
    rows = synthetic((16, 64, 256), pos_base=lambda n: 0)
    with pytest.raises(TooCleanError, match="too clean: check pos_base"):
        check_not_too_clean(rows)


def test_measure_kv4_refuses_the_pos_base_0_table_at_the_cli(monkeypatch):
    monkeypatch.setattr(measure, "synthetic", functools.partial(synthetic, pos_base=lambda n: 0))
    result = CliRunner().invoke(main, ["measure", "kv4", "--no-real", "--max-length", "64"])
    assert result.exit_code == 2
    assert "bonsai: error: too clean: check pos_base" in result.output


def test_measure_kv4_json_has_a_row_per_mode_and_length():
    result = CliRunner().invoke(main, ["measure", "kv4", "--no-real", "--max-length", "128", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["synthetic"]
    assert [(r["mode"], r["length"]) for r in rows][:4] == [("q4", 16), ("q4r", 16), ("q4", 32), ("q4r", 32)]
    assert len(rows) == 8 and all(r["pos_base"] == r["length"] - 1 for r in rows)


@pytest.mark.slow
def test_measure_kv4_model_part_reports_kl_and_argmax_changes():
    from bonsai.diagnostics.measure_model import measure_model

    rows = measure_model(64)
    assert {r["mode"] for r in rows} == {"q4", "q4r"}
    assert all(r["mean_kl"] >= 0 and 0 <= r["argmax_changed"] <= 1 for r in rows)


def test_measure_kv4_rejects_unknown_modes_and_lengths():
    result = CliRunner().invoke(main, ["measure", "kv4", "--no-real", "--modes", "q4,q3"])
    assert result.exit_code == 2 and "unknown mode(s) q3" in result.output
    result = CliRunner().invoke(main, ["measure", "kv4", "--no-real", "--quality-lengths", "12,x"])
    assert result.exit_code == 2 and "comma-separated integers" in result.output


def test_quality_table_bytes_are_the_cache_buffers_bytes(gpu):
    from bonsai.diagnostics.numpy_cache import NumpyKVCache as KVCache
    from bonsai.diagnostics.quality import bytes_per_position
    from bonsai.kv.format.modes import MODES

    for name, mode in MODES.items():
        cache = KVCache(gpu, 1, 3, 64, 128, mode=name, window=64)
        assert bytes_per_position(mode, 3, 64) == cache.bytes_per_position(), name


@pytest.mark.slow
def test_quality_table_on_the_default_model():
    from bonsai.diagnostics.quality import measure_quality, quality_table

    rows = measure_quality(70, [40, 70], ["f32", "q4", "kc4av4a"])
    assert [(r["mode"], r["context"]) for r in rows] == [(m, n) for m in ("f32", "q4", "kc4av4a") for n in (40, 70)]
    assert all(r["mean_kl"] == 0 and r["argmax_changed"] == 0 for r in rows if r["mode"] == "f32")
    assert all(r["mean_kl"] > 0 for r in rows if r["mode"] != "f32")
    assert "kc4av4a" in quality_table(rows)
