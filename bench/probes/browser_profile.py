"""Browser profile: where a decode step's time goes in the page (Pyodide + WebGPU on SwiftShader).

Loads the built extension's diagnostics page in headless Chromium, then runs Python in that page
(a copy of the page that leaves its Pyodide on `window`): the default model on `BrowserGpu`, a
prefill, then decode steps measured three ways: the engine's own loop under cProfile (the top
functions by own time: JS bridge calls, waits on the GPU, Python), the counts per token (dispatches,
submits, readbacks, taped replays), and recording against GPU time (one step's dispatches recorded
with no submit, then the same tape replayed and waited for). Prints tables; writes
bench/results/browser_profile.json. Needs Chromium and the fetched Pyodide (as the extension tests).

    python bench/probes/browser_profile.py [--kv f32] [--steps 8]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import functools  # noqa: E402
import http.server  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402
import threading  # noqa: E402
import zipfile  # noqa: E402
from collections.abc import Callable  # noqa: E402

from results_file import write_results  # noqa: E402

from bonsai.models import default_model_path  # noqa: E402
from bonsai_sync.bundle.extension import build_extension  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from bench.browser_bench import PROMPT, _Quiet  # noqa: E402
from tests.surfaces.extension.cdp import Chromium, find_chromium  # noqa: E402

# Runs inside the page; `KV`, `STEPS`, `PROMPT` are set first. Leaves JSON in `__profile`.
# The page opens the model from OPFS on `BrowserGpu`; --native runs the same code on wgpu-py's `Gpu`.
BROWSER_SETUP = textwrap.dedent('''
    from bonsai.gpu.browser import BrowserGpu
    from bonsai_extension.model_check import open_model
    gpu = BrowserGpu.create()
    reader = open_model(MODEL_PATH)
''')
NATIVE_SETUP = textwrap.dedent('''
    from bonsai.gguf import GGUFReader
    from bonsai.gpu.device import Gpu
    gpu = Gpu.create()
    reader = GGUFReader(MODEL_PATH)
''')
IN_PAGE = textwrap.dedent('''
    import cProfile, io, json, pstats, time
    from bonsai.config import ModelConfig
    from bonsai.engine import Engine, Sampling
    from bonsai.gpu import recorder as gpu_recorder

    counts = {"submits": 0, "reads": 0, "writes": 0, "waits": 0}
    secs = dict.fromkeys(counts, 0.0)  # wall seconds inside each verb (reads and waits block on the GPU)
    def counting(name, fn):
        def wrapped(*a, **k):
            counts[name] += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                secs[name] += time.perf_counter() - t0
        return wrapped
    gpu._submit = counting("submits", gpu._submit)
    gpu.read = counting("reads", gpu.read)
    gpu.write = counting("writes", gpu.write)
    gpu.wait = counting("waits", gpu.wait)
    engine = Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=KV, progress=False, max_positions=256)
    ids = engine.tokenizer.encode(PROMPT)
    out = {"adapter": gpu.description, "is_cpu": gpu.is_cpu, "prompt_tokens": len(ids), "kv": KV}
    t = time.perf_counter(); tok = engine.prefill_argmax(ids); out["prefill_s"] = time.perf_counter() - t
    # warm: the first steps compile kernels and tape; then measure STEPS steps, one per call (no resident block)
    engine.rewind(len(ids) - 1)
    engine.generate(ids[-1:], max_tokens=3, sampling=Sampling())
    engine.rewind(len(ids) - 1)
    # unprofiled: the decode steps' wall time split into blocked on the GPU (reads, waits) and the rest (host)
    for k in counts: counts[k], secs[k] = 0, 0.0
    gen = engine.generate(ids[-1:], max_tokens=STEPS + 1, sampling=Sampling())
    out["split"] = {"decode_s": gen.decode_s, "prefill_s": gen.prefill_s, "tokens": gen.tokens,
                    "blocked_s": secs["reads"] + secs["waits"], **{k + "_s": v for k, v in secs.items()}}
    engine.rewind(len(ids) - 1)
    for k in counts: counts[k], secs[k] = 0, 0.0
    d0, r0 = gpu.dispatch_count, engine.model.replays
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    gen = engine.generate(ids[-1:], max_tokens=STEPS + 1, sampling=Sampling())
    prof.disable()
    wall = time.perf_counter() - t
    out["generate"] = {"tokens": gen.tokens, "prefill_s": gen.prefill_s, "decode_s": gen.decode_s,
                       "decode_tokens_per_s": gen.decode_tokens_per_s, "wall_s": wall,
                       "dispatches": gpu.dispatch_count - d0, "replays": engine.model.replays - r0, **counts}
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
    out["profile_tottime"] = s.getvalue()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumtime").print_stats(40)
    out["profile_cumtime"] = s.getvalue()
    # GPU time per kernel of one taped decode step: each dispatch of the tape recorded REP times, waited for
    names = {id(k.pipeline): k.name for k in gpu._kernels._kernels.values()}
    tape = engine.model.last_tape
    REP = 4
    def timed(entries, rep):
        gpu.wait()
        t = time.perf_counter()
        for _ in range(rep):
            gpu.replay(entries)
        gpu.flush(); gpu.wait()
        return (time.perf_counter() - t) / rep
    out["step_gpu_s"] = [timed(tape, 1) for _ in range(3)] if tape else []  # q4res tapes no step
    per = {}
    for e in tape or []:
        if e is None:
            continue
        key = names.get(id(e[0]), "?") if e[0] is not gpu_recorder._COPY_TO_TEXTURE else "copy_to_texture"
        if key != "copy_to_texture":
            key += f" {tuple(e[2])}"
        per.setdefault(key, [0, 0.0])
        per[key][0] += 1
        per[key][1] += timed([e], REP)
    out["per_kernel"] = sorted(([k, n, s] for k, (n, s) in per.items()), key=lambda r: -r[2])
    # fixed cost of one dispatch: a kernel that does nothing, 1 workgroup, N times in one pass
    empty = gpu._compile("empty", "@group(0) @binding(0) var<storage, read_write> b: array<u32>;\\n"
                         "@compute @workgroup_size(64) fn main() { if (b[0] == 12345u) { b[0] = 1u; } }", "main")
    from bonsai.gpu.backend import Kernel
    kern, buf = Kernel("empty", empty), gpu.buffer(16)
    for n in (1, 300):
        gpu.wait(); t = time.perf_counter()
        for _ in range(n):
            gpu.dispatch(kern, [buf], 1)
        rec = time.perf_counter() - t
        gpu.flush(); gpu.wait()
        out[f"empty_x{n}"] = {"record_s": rec, "total_s": time.perf_counter() - t}
    __profile = json.dumps(out)
''')


def in_browser(code_for: Callable[[str], str]) -> dict:
    """Run `code_for(model path in the page)` in the diagnostics page's Pyodide; its `__profile`, parsed."""
    model = Path(default_model_path())
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        extension = tmp / "extension"
        with zipfile.ZipFile(build_extension(REPO, tmp / "dist", closure_dir=REPO / "surfaces/extension/vendor")) as zf:
            zf.extractall(extension)
        page_js = extension / "page.js"  # leave the page's Pyodide where this script can run code in it
        page_js.write_text(page_js.read_text().replace(
            "show(await runChecks(pyodide, params));", "window.__pyodide = pyodide; show(await runChecks(pyodide, params));"))
        (tmp / "models").mkdir()
        (tmp / "models" / model.name).symlink_to(model)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp / "models")))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        binary = find_chromium()
        if binary is None:
            raise SystemExit("no Chromium found: apt-get install chromium")
        chromium = Chromium(binary, extension, tmp / "profile")
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/{model.name}"
            with chromium.tab(f"page.html?checks=&model={url}") as page:
                page.wait_for_result(600)
                page.evaluate("window.__pyodide.globals.set('__code', " + json.dumps(code_for(f"/models/{model.name}")) + ")")
                reply = page.call("Runtime.evaluate", {
                    "expression": "window.__pyodide.runPythonAsync(window.__pyodide.globals.get('__code'))"
                                  ".then(() => window.__pyodide.globals.get('__profile'))",
                    "returnByValue": True, "awaitPromise": True}, timeout=3000)
                if "exceptionDetails" in reply:
                    details = reply["exceptionDetails"]
                    raise SystemExit("the page's Python failed: " + str(details.get("exception", {}).get("description")
                                                                        or details.get("text"))[-3000:])
                return json.loads(reply["result"]["value"])
        finally:
            chromium.close()
            server.shutdown()


def in_process(code: str) -> dict:
    """Run `code` here (native wgpu-py); its `__profile`, parsed."""
    scope: dict = {}
    exec(compile(code, "<native profile>", "exec"), scope)
    return json.loads(scope["__profile"])


def program(setup: str, model_path: str, code: str, **names: object) -> str:
    """`code` after `names` (as literals), MODEL_PATH and `setup` (which makes `gpu` and `reader`)."""
    return "".join(f"{k} = {v!r}\n" for k, v in {**names, "MODEL_PATH": model_path}.items()) + setup + code


def both_sides(code: str, **names: object) -> tuple[dict, dict]:
    """(`__profile` in the page on `BrowserGpu`, `__profile` here on wgpu-py's `Gpu`) of the same `code`."""
    browser = in_browser(lambda path: program(BROWSER_SETUP, path, code, **names))
    native = in_process(program(NATIVE_SETUP, str(default_model_path()), code, **names))
    return browser, native


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kv", default="f32")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--native", action="store_true", help="run the same measurements natively (wgpu-py, lavapipe here)")
    parser.add_argument("--in-page", help="run this Python file instead of the measurements, after `gpu` and `reader` are made (it sets __profile to JSON)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "browser_profile.json"))
    args = parser.parse_args()

    def code_for(model_path: str) -> str:
        return program(NATIVE_SETUP if args.native else BROWSER_SETUP, model_path,
                       Path(args.in_page).read_text() if args.in_page else IN_PAGE, KV=args.kv, STEPS=args.steps,
                       PROMPT=args.prompt)

    result = in_process(code_for(str(default_model_path()))) if args.native else in_browser(code_for)
    if args.in_page:
        print(json.dumps(result, indent=1))
        write_results(args.out, result)
        return
    g = result["generate"]
    steps = max(1, len(g["tokens"]) - 1)
    print(f"{result['adapter']}  is_cpu={result['is_cpu']}  kv={result['kv']}  prompt {result['prompt_tokens']} tokens")
    print(f"prefill {result['prefill_s']:.2f} s; decode {g['decode_tokens_per_s']:.3f} tok/s over {steps} steps")
    print("per decode token: " + ", ".join(f"{k} {g[k] / steps:.1f}" for k in
                                           ("dispatches", "submits", "reads", "writes", "waits", "replays")))
    sp = result["split"]
    total = sp["prefill_s"] + sp["decode_s"]  # generate's first step (a one-token prefill) and the decode steps
    print(f"unprofiled, {steps + 1} steps: {total:.3f} s, blocked on the GPU (reads, waits) {sp['blocked_s']:.3f} s, "
          f"host {total - sp['blocked_s']:.3f} s ({(total - sp['blocked_s']) / (steps + 1):.3f} s a step; "
          f"submits {sp['submits_s']:.3f} s, writes {sp['writes_s']:.3f} s)")
    print(result["profile_tottime"])
    print(result["profile_cumtime"])
    print("one taped step replayed and waited for (s):", ", ".join(f"{x:.3f}" for x in result["step_gpu_s"]) or "no tape")
    total = sum(r[2] for r in result["per_kernel"]) or 1.0
    print(f"{'kernel (groups)':70} {'n':>4} {'s/step':>8} {'share':>6}")
    for name, n, sec in result["per_kernel"]:
        print(f"{name:70.70} {n:4d} {sec:8.4f} {sec / total:6.1%}")
    for n in (1, 300):
        e = result[f"empty_x{n}"]
        print(f"empty kernel x{n}: recorded in {e['record_s'] * 1e3:.1f} ms, done in {e['total_s'] * 1e3:.1f} ms")
    write_results(args.out, result)


if __name__ == "__main__":
    main()
