"""Speed at Bonsai's own scale: Bonsai-shaped Q1_0 models (bonsai_gguf.py) timed beside llama.cpp on the same file.

One command on the GPU machine: writes each shape's GGUF to a temporary folder (never the repository), then
per shape runs decode_bench.py (decode after each --contexts length, prefill 512, dispatches per token),
kernel_probe.py (the per-kernel split of a decode step after 1,024 tokens) and, given --llama, llama.cpp's
`llama bench` (pp512, tg128 at the same depths) on the same file; --q1-probe adds probes/q1_probe.py (the Q1_0
product beside a copy kernel's bandwidth) and the f32 FMA peak of roofline_probe.py. Prints one markdown table
and writes JSON with every tool's own output.

    python bench/scale_bench.py --tokenizer MODEL.gguf|TOK.json [--shapes 1.7B,8B] [--vocab 151936]
        [--contexts 1024,8000] [--new-tokens 128] [--llama /root/ll/llama] [--q1-probe] [--out scale_bench.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bonsai_gguf
from results_file import write_results

HERE = Path(__file__).parent
RUN_TIMEOUT_S = 240  # one tool's run: a hang costs this, not the whole call


def run(cmd: list[str], log: list[dict]) -> str:
    """Run a command, echo its output, keep it in `log`; a failure is logged and does not stop the others."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"timed out after {RUN_TIMEOUT_S} s: {' '.join(cmd)}", flush=True)
        log.append({"cmd": cmd, "rc": None, "s": time.perf_counter() - t0})
        return ""
    print(p.stdout[-6000:], p.stderr[-3000:] if p.returncode else "", sep="\n", flush=True)
    log.append({"cmd": cmd, "rc": p.returncode, "s": time.perf_counter() - t0})
    return p.stdout if p.returncode == 0 else ""


def layer_gflop(shape: bonsai_gguf.Shape) -> float:
    """GFLOP of one token's matrix products through the layers (2 per weight; the head and attention apart)."""
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    per_layer = shape.dim * (q + 2 * kv) + q * shape.dim + 3 * shape.dim * shape.ffn
    return 2 * shape.layers * per_layer / 1e9


def llama_rows(llama: str, model: Path, contexts: list[int], log: list[dict]) -> dict[str, float]:
    """llama.cpp's pp512 and tg128 at depth 0 and each context (rounded up to a power of two, as llama bench
    reports them): {'pp512@d0': tok/s, 'tg128@d1024': tok/s, ...}."""
    depths = sorted({0, *(1 << (c - 1).bit_length() for c in contexts)})
    out = run([llama, "bench", "-m", str(model), "-p", "512", "-n", "128", "-d", ",".join(map(str, depths)),
               "-ngl", "99", "-r", "3", "-dev", "Vulkan0", "-o", "json"], log)
    rows: dict[str, float] = {}
    try:
        for r in json.loads(out[out.index("["):]):
            kind = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
            rows[f"{kind}@d{r.get('n_depth', 0)}"] = r["avg_ts"]
            rows[f"{kind}@d{r.get('n_depth', 0)} sd"] = r["stddev_ts"]
    except (ValueError, KeyError) as e:
        print(f"llama bench output not read: {e}")
    return rows


def bench_shape(a: argparse.Namespace, name: str, tok: dict, tmp: Path, log: list[dict]) -> dict[str, Any]:
    shape = bonsai_gguf.SHAPES[name]
    model = tmp / f"{name}.gguf"
    t0 = time.perf_counter()
    bonsai_gguf.write(model, shape, tok, a.vocab, seed=0)
    res: dict[str, Any] = {"shape": name, "config": shape.__dict__, "vocab": a.vocab or len(tok["tokenizer.ggml.tokens"]),
                           "file_mib": model.stat().st_size / 2**20, "write_s": time.perf_counter() - t0,
                           "decode": {}, "layer_gflop_per_token": layer_gflop(shape)}
    py = sys.executable
    for i, ctx in enumerate(a.contexts):
        js = tmp / f"decode_{name}_{ctx}.json"
        run([py, "decode_bench.py", "--model", str(model), "--prompt-tokens", str(ctx), "--new-tokens",
             str(a.new_tokens), "--no-reference", "--prefill-kernels", "tiled", "--prefill-repeats",
             "3" if i == 0 else "1", "--out", str(js)], log)
        if js.exists():
            g = json.loads(js.read_text())["rows"][0]
            res["decode"][ctx] = g
    js = tmp / f"kernels_{name}.json"
    run([py, "kernel_probe.py", "--model", str(model), "--context", str(a.contexts[0]), "--reps", str(a.reps),
         "--out", str(js)], log)
    if js.exists():
        res["kernels"] = json.loads(js.read_text())
    if a.llama:
        res["llama"] = llama_rows(a.llama, model, a.contexts, log)
    model.unlink()
    return res


def table(results: list[dict], peak_gflop_s: float | None) -> str:
    lines = ["| shape | what | bonsai | llama.cpp Vulkan | ratio |", "| --- | --- | ---: | ---: | ---: |"]
    for r in results:
        ll = r.get("llama", {})
        label = f"{r['shape']} ({r['file_mib']:.0f} MiB, vocab {r['vocab']})"
        for ctx, d in r["decode"].items():
            depth = 1 << (int(ctx) - 1).bit_length()
            peer = ll.get(f"tg128@d{depth}")
            lines.append(f"| {label} | decode after {int(ctx):,} tokens | {d['decode_tok_s']:.0f} "
                         f"({d['dispatches_per_token']:.0f} dispatches/token) | "
                         + (f"{peer:.0f} ± {ll[f'tg128@d{depth} sd']:.0f} (tg128 @ d{depth}) | {d['decode_tok_s'] / peer:.2f}x |"
                            if peer else "| |"))
            label = ""
        first = next(iter(r["decode"].values()), None)
        if first:
            pp = first["prefill_tok_s"]
            peer = ll.get("pp512@d0")
            tf = pp * r["layer_gflop_per_token"] / 1e3
            of_peak = f", {tf * 1e3 / peak_gflop_s:.0%} of the FMA peak" if peak_gflop_s else ""
            lines.append(f"| {label} | prefill 512 | {pp:.0f} ({tf:.1f} TFLOP/s in the layers{of_peak}) | "
                         + (f"{peer:.0f} (pp512) | {pp / peer:.2f}x |" if peer else "| |"))
        k = r.get("kernels")
        if k:
            step = k["step"]
            top = ", ".join(f"{x['kernel']} x{x['per_step']} {x['step_us']:.0f} us" for x in k["kinds"][:5])
            lines.append(f"| | decode step after {k['context']:,} (kernel_probe; kinds repeated, L2-warm) | {step['gpu_ms_per_step']:.2f} ms GPU, "
                         f"{step['dispatches']} dispatches; largest kinds: {top} | | |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokenizer", required=True, help="the default model's GGUF, or bonsai_gguf.py's tokenizer dump")
    p.add_argument("--shapes", default="1.7B,8B", help=f"of {', '.join(bonsai_gguf.SHAPES)}")
    p.add_argument("--vocab", type=int, default=bonsai_gguf.REAL_VOCAB, help="0: the tokenizer's own size")
    p.add_argument("--contexts", default="1024,8000", help="decode after prompts of these lengths")
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--reps", type=int, default=50, help="kernel_probe repeats per kind")
    p.add_argument("--llama", default=None, help="llama.cpp's multi-call binary (`llama bench`)")
    p.add_argument("--q1-probe", action="store_true", help="also q1_probe.py and the FMA peak")
    p.add_argument("--tmp", default=None, help="where the GGUFs go (default: a temporary folder)")
    p.add_argument("--out", default=str(HERE / "results" / "scale_bench.json"))
    a = p.parse_args()
    a.contexts = [int(c) for c in a.contexts.split(",")]
    tok = bonsai_gguf.read_tokenizer(a.tokenizer)
    log: list[dict] = []
    peak = None
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        if a.q1_probe:
            js = Path(tmp) / "q1.json"
            run([sys.executable, "probes/q1_probe.py", "--out", str(js)], log)
            if js.exists():
                extra["q1_probe"] = json.loads(js.read_text())
            js = Path(tmp) / "roof.json"
            run([sys.executable, "roofline_probe.py", "--tiles", "", "--out", str(js)], log)
            if js.exists():
                extra["roofline"] = json.loads(js.read_text())
                peak = extra["roofline"]["rows"][0]["gflop_s"]
        results = [bench_shape(a, s, tok, Path(tmp), log) for s in a.shapes.split(",")]
    text = table(results, peak)
    print(f"\n{platform.node()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          + (f"; f32 FMA peak {peak / 1e3:.1f} TFLOP/s (roofline_probe)" if peak else ""))
    print(text)
    write_results(a.out, {"host": platform.node(), "shapes": results, "table": text, "log": log, **extra})


if __name__ == "__main__":
    main()
