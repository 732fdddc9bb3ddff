"""`python -m bench`: each workload's rows come back stamped (commit, device, date) in one table and in JSON."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import stamp  # noqa: E402
import workloads  # noqa: E402

STAND_IN = '''
import argparse, json
def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kv"); p.add_argument("--out")
    a = p.parse_args()
    rows = [{"engine": "stand-in", "kv": a.kv, "tok_s": 12.5, "nested": {"x": 1}, "runs": [1, 2]}]
    open(a.out, "w").write(json.dumps({"device": "Stand-in GPU", "rows": rows}))
'''


def test_every_workload_names_a_script_with_a_main():
    for w in workloads.WORKLOADS.values():
        source = (REPO / "bench" / f"{w.script}.py").read_text()
        assert "def main(" in source, w.script


def test_rows_are_stamped_with_commit_device_and_date():
    rows = stamp.stamp([{"a": 1, "b": {"c": 2.5}, "skip": [1]}], "decode", "NVIDIA H100")
    (row,) = rows
    assert row["workload"] == "decode" and row["device"] == "NVIDIA H100"
    assert row["commit"] not in ("", "unknown") and row["date"].endswith("UTC")
    assert row["a"] == 1 and row["b.c"] == 2.5 and "skip" not in row


def test_markdown_keeps_the_columns_asked_for_and_escapes_pipes():
    table = stamp.markdown([{"x": "a|b", "y": 1234.5678, "z": 0.5}], ["y", "x", "missing"])
    assert table.splitlines() == ["| y | x |", "| --- | --- |", "| 1,234.6 | a/b |"]


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """A workload `fake` whose script is a stand-in writing one row, registered as a new workload is."""
    (tmp_path / "fake_bench.py").write_text(STAND_IN)
    monkeypatch.syspath_prepend(str(tmp_path))
    w = workloads.Workload("fake", "fake_bench", "a stand-in", lambda a: ["--kv", a.kv], lambda p: p["rows"],
                           ["engine", "kv", "tok_s"], ("kv",), lambda p: p.get("device"))
    monkeypatch.setitem(workloads.WORKLOADS, "fake", w)
    return tmp_path


def test_a_registered_workload_runs_and_writes_stamped_json(stand_in, capsys):
    spec = importlib.util.spec_from_file_location("bench_main", REPO / "bench" / "__main__.py")
    assert spec is not None and spec.loader is not None
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    out = stand_in / "rows.json"
    main.main(["fake", "--kv", "q4res", "--json", str(out)])
    printed = capsys.readouterr().out
    assert "| commit | device | date | engine | kv | tok_s |" in printed
    assert "| Stand-in GPU |" in printed and "| stand-in | q4res | 12.500 |" in printed
    (row,) = json.loads(out.read_text())["rows"]
    assert row["device"] == "Stand-in GPU" and row["kv"] == "q4res" and row["nested.x"] == 1


def test_the_entry_point_lists_every_workload():
    result = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    for name in ("decode", "prefill", "kv-stream", "sync", "tenant-load", "browser"):
        assert name in result.stdout


def test_an_unknown_peer_is_refused_by_name():
    result = subprocess.run([sys.executable, "-m", "bench", "decode", "--peers", "vllm"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--peers: vllm is not a peer of decode" in result.stderr


def test_llama_cpp_rows_come_from_its_json(tmp_path):
    """`peers.llama_rows` runs `llama bench -o json` and keeps one row per test, tok/s where the test's kind says."""
    import peers

    fake = tmp_path / "llama"
    fake.write_text("#!/bin/sh\n" "[ \"$1\" = bench ] || exit 9\n" "echo '" + json.dumps([
        {"build_commit": "0c1e570", "backends": "Vulkan", "gpu_info": "NVIDIA H100", "n_prompt": 512, "n_gen": 0,
         "n_depth": 1024, "avg_ts": 11474.2, "stddev_ts": 570.1},
        {"build_commit": "0c1e570", "backends": "Vulkan", "gpu_info": "NVIDIA H100", "n_prompt": 0, "n_gen": 128,
         "n_depth": 1024, "avg_ts": 455.5, "stddev_ts": 128.4}]) + "'\n")
    fake.chmod(0o755)
    pp, tg = peers.llama_rows(str(fake), "model.gguf", 512, 128, 1024)
    assert pp["test"] == "pp512 d1024" and pp["prefill_tok_s"] == 11474.2 and "decode_tok_s" not in pp
    assert tg["test"] == "tg128 d1024" and tg["decode_tok_s"] == 455.5 and tg["device"] == "NVIDIA H100"
    fake.write_text("#!/bin/sh\necho 'no Vulkan device' >&2\nexit 1\n")
    with pytest.raises(RuntimeError, match="no Vulkan device"):
        peers.llama_rows(str(fake), "model.gguf", 512, 128, 1024)


def test_the_commit_can_be_named_where_the_tree_has_no_git(monkeypatch):
    monkeypatch.setenv("BONSAI_COMMIT", "5c59536")
    assert stamp.commit() == "5c59536"
