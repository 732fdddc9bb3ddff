"""Browser benchmark: decode tokens/s of the runtime in headless Chromium (Pyodide, WebGPU) beside native.

One run, same machine, same model, prompt and lengths: the extension is built from the synced
closure, loaded unpacked into headless Chromium (on a machine without a GPU its WebGPU runs on
SwiftShader), and its diagnostics page generates greedily with `bonsai.engine.Engine` on
`BrowserGpu`; then the native engine (wgpu-py; lavapipe here) generates the same tokens. Both
report the engine's own `decode_tokens_per_s` (tokens after the first over their time), and the CPU
seconds per decode token (bench/tree_cpu.py: Chromium's whole process tree, SwiftShader's threads in
its GPU process; natively this process, lavapipe's threads), which the shared machine's load disturbs
far less than wall time. The greedy tokens must be equal, or the row says so. Prints a table and writes
bench/results/browser_bench.json. Needs Chromium and the fetched Pyodide (as the extension tests).

    python bench/browser_bench.py [--kv f32 q4res] [--new-tokens 8] [--prompt TEXT] [--generic-tiles]

--generic-tiles runs both sides with the CPU matmul's generic tile (`matmul.CPU_NAMED_TILES = False`:
the kernel before main1 / main4), for a before/after pair on one machine.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import platform
import sys
import tempfile
import threading
import time
import urllib.parse
import zipfile
from pathlib import Path

from results_file import write_results
from tree_cpu import CpuSampler

from bonsai.engine import Sampling
from bonsai.engine.native import load_engine
from bonsai.models import default_model_path
from bonsai_sync.bundle.extension import build_extension

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the extension tests' DevTools client drives the browser here too
from tests.surfaces.extension.cdp import Chromium, find_chromium  # noqa: E402

# ~90 tokens: past the first 64-position group, so grouped modes (q4res) quantise a group on the GPU
PROMPT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
          "combined movable metal type, oil-based ink and a wooden screw press into a system that could "
          "produce books quickly and cheaply. Within a few decades printing shops had spread across Europe, "
          "and the price of a book fell so far that ordinary merchants could own several. The")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def end_headers(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        super().end_headers()

    def log_message(self, *args: object) -> None:
        pass


def browser_runs(modes: list[str], prompt: str, new_tokens: int, tmp: Path, generic_tiles: bool = False) -> dict[str, dict]:
    """Per KV mode, the diagnostics page's generate check (a fresh page, so a fresh engine, per mode)."""
    extension = tmp / "extension"
    with zipfile.ZipFile(build_extension(REPO, tmp / "dist", closure_dir=REPO / "surfaces/extension/vendor")) as zf:
        zf.extractall(extension)
    if generic_tiles:
        [matmul] = extension.rglob("bonsai/ops/matmul.py")
        text = matmul.read_text()
        if "CPU_NAMED_TILES = True" not in text:
            raise SystemExit(f"{matmul}: no CPU_NAMED_TILES = True to switch off")
        matmul.write_text(text.replace("CPU_NAMED_TILES = True", "CPU_NAMED_TILES = False"))
    model = Path(default_model_path())
    (tmp / "models").mkdir()
    (tmp / "models" / model.name).symlink_to(model)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_Quiet, directory=str(tmp / "models")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    binary = find_chromium()
    if binary is None:
        raise SystemExit("no Chromium found: apt-get install chromium")
    chromium = Chromium(binary, extension, tmp / "profile")
    sampler = CpuSampler(chromium.process.pid)
    out = {}
    try:
        for kv in modes:
            query = urllib.parse.urlencode({"checks": "", "model": f"http://127.0.0.1:{server.server_address[1]}/"
                                            f"{model.name}", "prompt": prompt, "tokens": new_tokens, "kv": kv})
            started = time.perf_counter()
            result = chromium.open(f"page.html?{query}", timeout=1800)
            check = result["checks"].get("generate") or {}
            if not check.get("ok"):
                raise SystemExit(f"the page failed for kv={kv}: {result}")
            out[kv] = {**check, "page_s": round(time.perf_counter() - started, 1)}
        sampler.stop()
        for check in out.values():
            end = check["decode_ended_at"]
            check["decode_cpu_s"] = sampler.cpu_between(end - check["decode_s"], end)
    finally:
        sampler.stop()
        chromium.close()
        server.shutdown()
    return out


def native_run(kv: str, prompt: str, new_tokens: int) -> dict:
    engine = load_engine(None, kv=kv, progress=False, max_positions=256)  # as the page's generate check
    ids = engine.tokenizer.encode(prompt)
    sampler = CpuSampler(os.getpid())  # lavapipe's threads are this process's
    gen = engine.generate(ids, max_tokens=new_tokens, sampling=Sampling())
    end = time.time()
    sampler.stop()
    return {"tokens": gen.tokens, "prompt_tokens": len(ids), "prefill_s": round(gen.prefill_s, 3),
            "decode_tokens_per_s": round(gen.decode_tokens_per_s, 3), "adapter": engine.gpu.description,
            "replayed_steps": engine.model.replays, "decode_s": gen.decode_s,
            "decode_cpu_s": sampler.cpu_between(end - gen.decode_s, end)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kv", nargs="+", default=["f32", "q4res"])
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--generic-tiles", action="store_true", help="the CPU matmul's generic tile on both sides")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "browser_bench.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        browser = browser_runs(args.kv, args.prompt, args.new_tokens, Path(tmp), args.generic_tiles)
    if args.generic_tiles:
        import bonsai.ops.matmul as mm

        mm.CPU_NAMED_TILES = False
    native = {kv: native_run(kv, args.prompt, args.new_tokens) for kv in args.kv}

    rows = []
    print(f"prompt: {native[args.kv[0]]['prompt_tokens']} tokens, then {args.new_tokens} greedy")
    print(f"{'kv':6} {'backend':42} {'prefill s':>9} {'decode tok/s':>12} {'native/browser':>14} "
          f"{'CPU s/token':>11} {'browser/native CPU':>18} {'same tokens':>11} {'replayed':>8}")
    for kv in args.kv:
        b, n = browser[kv], native[kv]
        ratio = n["decode_tokens_per_s"] / b["decode_tokens_per_s"] if b["decode_tokens_per_s"] else float("inf")
        steps = max(1, len(n["tokens"]) - 1)
        cpu_b, cpu_n = b["decode_cpu_s"] / steps, n["decode_cpu_s"] / steps
        same = b["tokens"] == n["tokens"]
        print(f"{kv:6} {'native: ' + n['adapter']:42.42} {n['prefill_s']:9.2f} {n['decode_tokens_per_s']:12.3f} "
              f"{'':>14} {cpu_n:11.3f} {'':>18} {'':>11} {n['replayed_steps']:8d}")
        print(f"{kv:6} {'browser: ' + str(b['adapter']):42.42} {b['prefill_s']:9.2f} {b['decode_tokens_per_s']:12.3f} "
              f"{ratio:14.2f} {cpu_b:11.3f} {cpu_b / cpu_n:18.2f} {str(same):>11} {b['replayed_steps']:8d}")
        rows.append({"kv": kv, "native": n, "browser": b, "native_over_browser": round(ratio, 3), "same_tokens": same,
                     "cpu_s_per_token": {"native": round(cpu_n, 4), "browser": round(cpu_b, 4)},
                     "browser_over_native_cpu": round(cpu_b / cpu_n, 3)})
    write_results(args.out, {"bench": "browser", "prompt": args.prompt, "new_tokens": args.new_tokens,
                             "generic_tiles": args.generic_tiles,
                             "machine": platform.platform(), "rows": rows,
                             "note": "one run; the machine is shared, so absolute speeds are noisy"})


if __name__ == "__main__":
    main()
