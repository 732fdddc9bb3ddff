"""Browser kernels: the GPU time of each kernel of a decode step, SwiftShader (headless Chromium) beside lavapipe.

The same Python runs in the extension's diagnostics page (on `BrowserGpu`) and here (on wgpu-py's `Gpu`):
the default model, the printing-press prompt prefilled, a few decode steps, then two one-token steps
recorded with taping on and the engine's replay off (so a mode whose steps are never replayed, q4res,
is captured too). For each distinct (kernel, workgroups) one of its dispatches is recorded `--reps`
times into one pass and waited for; the time per dispatch is the minimum over `--trials` (the shared
machine only ever adds time). Prints a table per KV mode (dispatches per step, ms per dispatch on
each side, their ratio, ms per step) and writes bench/results/browser_kernels.json.

    python bench/browser_kernels.py [--kv f32 q4res] [--reps 10] [--trials 5]
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from browser_profile import PROMPT, both_sides
from results_file import write_results

MEASURE = textwrap.dedent('''
    import json, time
    from bonsai.config import ModelConfig
    from bonsai.engine import Engine, Sampling
    from bonsai.gpu import recorder as gpu_recorder

    def per_dispatch(entry):
        best = 1e9
        for _ in range(TRIALS):
            gpu.wait(); t = time.perf_counter()
            gpu.replay([entry] * REPS); gpu.flush(); gpu.wait()
            best = min(best, (time.perf_counter() - t) / REPS)
        return best

    result = {"adapter": gpu.description, "modes": {}}
    for kv in MODES:
        engine = Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=kv, progress=False, max_positions=256)
        ids = engine.tokenizer.encode(PROMPT)
        engine.generate(ids, max_tokens=4, sampling=Sampling())  # prefill, compile, warm
        engine.rewind(len(ids) - 1)
        engine.model.replay = False  # every step through `dispatch`, so the tape below sees it
        gpu.start_tape()
        engine.generate(ids[-1:], max_tokens=2, sampling=Sampling())  # two one-token steps
        tape = [e for e in gpu._tape if e is not None]
        gpu.stop_tape()
        names = {id(k.pipeline): k.name.split("/")[-1] for k in gpu._kernels._kernels.values()}
        groups = {}
        for e in tape:
            key = "copy_to_texture" if e[0] is gpu_recorder._COPY_TO_TEXTURE else f"{names.get(id(e[0]), '?')} {tuple(e[2])}"
            groups.setdefault(key, []).append(e)
        result["modes"][kv] = {key: {"per_step": len(es) / 2, "ms": per_dispatch(es[0]) * 1e3} for key, es in groups.items()}
        del engine
    __profile = json.dumps(result)
''')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kv", nargs="+", default=["f32", "q4res"])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "browser_kernels.json"))
    args = parser.parse_args()

    browser, native = both_sides(MEASURE, MODES=args.kv, REPS=args.reps, TRIALS=args.trials, PROMPT=PROMPT)
    rows = []
    for kv in args.kv:
        b, n = browser["modes"][kv], native["modes"][kv]
        print(f"\nkv={kv}: browser {browser['adapter']}, native {native['adapter']}")
        print(f"{'kernel (workgroups)':44} {'per step':>8} {'browser ms':>10} {'native ms':>9} {'ratio':>6} "
              f"{'browser ms/step':>15} {'native ms/step':>14}")
        tb = tn = 0.0
        for key in sorted(b, key=lambda k: -b[k]["ms"] * b[k]["per_step"]):
            if key not in n:
                print(f"{key:44.44} (browser only)")
                continue
            per, bm, nm = b[key]["per_step"], b[key]["ms"], n[key]["ms"]
            tb, tn = tb + per * bm, tn + per * nm
            print(f"{key:44.44} {per:8.1f} {bm:10.3f} {nm:9.3f} {bm / nm:6.2f} {per * bm:15.1f} {per * nm:14.1f}")
            rows.append({"kv": kv, "kernel": key, "per_step": per, "browser_ms": bm, "native_ms": nm})
        print(f"{'sum':44} {'':8} {'':10} {'':9} {tb / tn:6.2f} {tb:15.1f} {tn:14.1f}")
    write_results(args.out, {"bench": "browser_kernels", "reps": args.reps, "trials": args.trials,
                             "browser_adapter": browser["adapter"], "native_adapter": native["adapter"], "rows": rows,
                             "note": "minimum per dispatch over trials; the dispatches of one step, not their overlap"})


if __name__ == "__main__":
    main()
