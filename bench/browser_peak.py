"""Browser peak: each CPU driver's arithmetic rate as WGSL reaches it, SwiftShader (headless Chromium) beside lavapipe.

The same Python runs in the extension's diagnostics page (on `BrowserGpu`, SwiftShader) and here (on
wgpu-py's `Gpu`, lavapipe), alternating `--rounds` times (native, browser, native, ...): load-free
kernels whose op counts are known, each recorded as many dispatches in one pass (enough for about
`--target` seconds), the flush and wait timed, the minimum over `--trials`. Kernels: independent f32
FMA chains (roofline_probe.wgsl) and the same written as `a * m + c`; a Q4_1-style decode mix (shift,
mask, u32 -> f32 convert, fma per 4-bit code) on codes made from invocation ids, written three ways
(vector ops, the convert from i32, the CPU matmul's scalar nib_lo); the same with the codes read by
textureLoad from an rgba32uint word texture (as the CPU matmul reads weights), small (cache-resident)
and large; and the FMA kernel at 1, 2, 8, 16, 32 and 64 workgroups, with the CPU seconds
its trials took (Chromium's whole process tree, bench/tree_cpu.py; natively this process) over their
wall seconds: the CPU threads the driver gives such a dispatch. Prints a table (kernel, lavapipe
rate, SwiftShader rate, ratio, per CPU second too), whether every kernel's outputs (the first four
and the sum of all) are the same on both drivers, and writes bench/results/browser_peak.json.
Needs Chromium and the fetched Pyodide (as the extension tests).

    python bench/browser_peak.py [--rounds 2] [--trials 5] [--target 0.4]
"""

from __future__ import annotations

import argparse
import os
import textwrap
import time
from pathlib import Path

import browser_profile
from browser_profile import in_browser, in_process, program
from results_file import write_results
from tree_cpu import CpuSampler

from bonsai.gpu.shaders import render

WG = 256  # invocations per workgroup in every kernel here
GROUPS = 64  # workgroups of the peak rows (as roofline_probe.py on a CPU adapter)
FMA_ITERS, DECODE_ITERS = 1024, 256

# Runs on each side after `gpu` is made; `CASES`, `TRIALS`, `TARGET` are set first. Leaves JSON in `__profile`.
BROWSER_SETUP = textwrap.dedent('''
    from bonsai.gpu.browser import BrowserGpu
    gpu = BrowserGpu.create()
''')
NATIVE_SETUP = textwrap.dedent('''
    from bonsai.gpu.device import Gpu
    gpu = Gpu.create()
''')
MEASURE = textwrap.dedent('''
    import json, math, random, struct, time
    from bonsai.gpu.backend import Kernel

    def measure(case):
        kernel = Kernel(case["name"], gpu._compile(case["name"], case["code"], "main"))
        out_buf = gpu.buffer(4 * WG_SIZE * case["groups"])
        bound = [out_buf]
        if case["texels"]:
            tex = gpu.word_texture(4 * case["texels"])
            gpu.write_texture(tex, random.Random(0).randbytes(16 * case["texels"]))
            bound = [tex, out_buf]
        def run(reps):  # record `reps` dispatches in one pass (untimed), then time their flush and wait
            for _ in range(reps):
                gpu.dispatch(kernel, bound, (case["groups"],))
            start, wall0 = time.perf_counter(), time.time()
            gpu.flush(); gpu.wait()
            return time.perf_counter() - start, (wall0, time.time())
        run(1)  # a CPU driver compiles at the first dispatch
        once = min(run(1)[0] for _ in range(2))
        reps = max(1, min(4000, math.ceil(TARGET / max(once, 1e-6))))
        runs = [run(reps) for _ in range(TRIALS)]
        out = struct.unpack(f"<{WG_SIZE * case['groups']}f", gpu.read(out_buf))
        check = [*out[:4], math.fsum(out)]  # the first four invocations' results and the sum of all
        return {"reps": reps, "s": min(r[0] for r in runs) / reps, "trial_s": [r[0] for r in runs],
                "windows": [r[1] for r in runs], "check": check}

    result = {"adapter": gpu.description, "cases": {c["name"]: measure(c) for c in CASES}}
    __profile = json.dumps(result)
''')


def cases() -> list[dict]:
    """(name, WGSL source, workgroups, texture texels, op count per dispatch, unit) of every kernel timed."""
    here = Path(__file__).parent

    def source(filename: str, **constants: object) -> str:
        return render((here / filename).read_text(), {"WG": WG, **constants}, name=filename)

    def flops(groups: int) -> int:  # 8 chains x ITERS fma (2 flop) per invocation
        return 2 * 8 * FMA_ITERS * WG * groups

    decode_ops = 4 * 32 * DECODE_ITERS * WG * GROUPS  # shift, mask, convert, fma per code; 32 codes a step
    fma = source("roofline_probe.wgsl", ITERS=FMA_ITERS)
    out = [
        {"name": "f32 FMA chains (roofline_probe.wgsl)", "code": fma, "groups": GROUPS, "texels": 0,
         "ops": flops(GROUPS), "unit": "GFLOP/s"},
        {"name": "f32 a * m + c chains", "code": source("browser_peak_muladd.wgsl", ITERS=FMA_ITERS),
         "groups": GROUPS, "texels": 0, "ops": flops(GROUPS), "unit": "GFLOP/s"},
        {"name": "Q4 decode mix, codes from ids", "code": source("browser_peak_decode.wgsl", ITERS=DECODE_ITERS),
         "groups": GROUPS, "texels": 0, "ops": decode_ops, "unit": "Gop/s"},
        {"name": "same, convert from i32", "code": source("browser_peak_decode_i32.wgsl", ITERS=DECODE_ITERS),
         "groups": GROUPS, "texels": 0, "ops": decode_ops, "unit": "Gop/s"},
        {"name": "same, as nib_lo (scalar per word)", "code": source("browser_peak_decode_nib.wgsl", ITERS=DECODE_ITERS),
         "groups": GROUPS, "texels": 0, "ops": decode_ops, "unit": "Gop/s"},
    ]
    for texels, label in ((16 * 1024, "256 KiB"), (1024 * 1024, "16 MiB")):
        out.append({"name": f"Q4 decode mix, textureLoad {label}", "groups": GROUPS, "texels": texels,
                    "code": source("browser_peak_decode_tex.wgsl", ITERS=DECODE_ITERS, TEXELS=texels),
                    "ops": decode_ops, "unit": "Gop/s"})
        out.append({"name": f"same, as nib_lo, textureLoad {label}", "groups": GROUPS, "texels": texels,
                    "code": source("browser_peak_decode_tex_nib.wgsl", ITERS=DECODE_ITERS, TEXELS=texels),
                    "ops": decode_ops, "unit": "Gop/s"})
    for groups in (1, 2, 8, 16, 32):
        out.append({"name": f"FMA chains, {groups} workgroup{'s' if groups > 1 else ''}", "code": fma,
                    "groups": groups, "texels": 0, "ops": flops(groups), "unit": "GFLOP/s"})
    return out


class _SampledChromium(browser_profile.Chromium):
    """browser_profile's Chromium with a CpuSampler on its whole process tree (the last one made is `last`)."""

    last: CpuSampler | None = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        _SampledChromium.last = None  # a failed start closes before its sampler exists
        super().__init__(*args, **kwargs)
        _SampledChromium.last = CpuSampler(self.process.pid)

    def close(self) -> None:
        if _SampledChromium.last is not None:
            _SampledChromium.last.stop()
        super().close()


def with_cpu(result: dict, sampler: CpuSampler) -> dict:
    """`result` with each case's CPU seconds over its trials' windows (and over their wall seconds)."""
    for case in result["cases"].values():
        cpu = sum(sampler.cpu_between(t0, t1) for t0, t1 in case["windows"])
        case["cpu_s"], case["threads"] = cpu, cpu / sum(t1 - t0 for t0, t1 in case["windows"])
    return result


def one_round(kernel_cases: list[dict], trials: int, target: float, side: str) -> dict:
    names = {"CASES": kernel_cases, "TRIALS": trials, "TARGET": target, "WG_SIZE": WG}
    if side == "browser":
        browser_profile.Chromium = _SampledChromium  # in_browser makes its Chromium from this module's name
        result = in_browser(lambda path: program(BROWSER_SETUP, path, MEASURE, **names))
        assert _SampledChromium.last is not None
        return with_cpu(result, _SampledChromium.last)
    sampler = CpuSampler(os.getpid())  # lavapipe's threads are this process's
    try:
        result = in_process(program(NATIVE_SETUP, "", MEASURE, **names))
    finally:
        sampler.stop()
    return with_cpu(result, sampler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="native then browser, this many times")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.4, help="seconds of work per trial")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "browser_peak.json"))
    args = parser.parse_args()

    kernel_cases = cases()
    runs: list[dict] = []
    for r in range(args.rounds):
        for side in ("native", "browser"):
            started = time.time()
            load = os.getloadavg()
            res = one_round(kernel_cases, args.trials, args.target, side)
            runs.append({"round": r, "side": side, "started": started, "load_before": load,
                         "load_after": os.getloadavg(), **res})
            print(f"round {r} {side}: {res['adapter']}, {time.time() - started:.0f} s, "
                  f"load {load[0]:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)

    def best(side: str, name: str, key: str) -> float:
        return min(run["cases"][name][key] for run in runs if run["side"] == side)

    rows = []
    print(f"\nrates: ops / minimum seconds per dispatch over {args.trials} trials x {args.rounds} rounds; "
          f"per CPU s: ops / the CPU seconds of the best round's trials; threads: CPU s / wall s")
    print(f"| kernel | groups | unit | lavapipe | SwiftShader | ratio | lavapipe per CPU s | SwiftShader per CPU s "
          f"| ratio per CPU s | lavapipe threads | SwiftShader threads |\n| --- | ---: | --- |{' ---: |' * 8}")
    for case in kernel_cases:
        name = case["name"]
        n_s, b_s = best("native", name, "s"), best("browser", name, "s")
        per_cpu = {}
        for side in ("native", "browser"):
            c = min((run["cases"][name] for run in runs if run["side"] == side), key=lambda c: c["s"])
            per_cpu[side] = (case["ops"] * c["reps"] * len(c["windows"]) / c["cpu_s"] / 1e9, c["threads"])
        n_rate, b_rate = case["ops"] / n_s / 1e9, case["ops"] / b_s / 1e9
        rows.append({"kernel": name, "groups": case["groups"], "unit": case["unit"], "ops": case["ops"],
                     "native_rate": n_rate, "browser_rate": b_rate, "ratio": n_rate / b_rate,
                     "native_per_cpu_s": per_cpu["native"][0], "browser_per_cpu_s": per_cpu["browser"][0],
                     "native_threads": per_cpu["native"][1], "browser_threads": per_cpu["browser"][1],
                     "native_rounds": [case["ops"] / run["cases"][name]["s"] / 1e9 for run in runs if run["side"] == "native"],
                     "browser_rounds": [case["ops"] / run["cases"][name]["s"] / 1e9 for run in runs if run["side"] == "browser"]})
        r = rows[-1]
        print(f"| {name} | {case['groups']} | {case['unit']} | {n_rate:.2f} | {b_rate:.2f} | {r['ratio']:.2f}x "
              f"| {r['native_per_cpu_s']:.2f} | {r['browser_per_cpu_s']:.2f} "
              f"| {r['native_per_cpu_s'] / r['browser_per_cpu_s']:.2f}x | {r['native_threads']:.2f} | {r['browser_threads']:.2f} |")
    print("\nper round (rate, native / browser):")
    for r in rows:
        print(f"  {r['kernel']:40} native " + " ".join(f"{x:7.2f}" for x in r["native_rounds"])
              + "  browser " + " ".join(f"{x:7.2f}" for x in r["browser_rounds"]))
    checks = {name: [run["cases"][name]["check"] for run in runs] for name in (c["name"] for c in kernel_cases)}
    differ = [name for name, cs in checks.items() if any(c != cs[0] for c in cs)]
    print("\noutputs (first four and the sum of all): " + (f"DIFFER for {', '.join(differ)}" if differ else
                                                          "the same on both drivers in every round, every kernel"))
    write_results(args.out, {"bench": "browser_peak", "trials": args.trials, "rounds": args.rounds, "target_s": args.target,
                             "wg": WG, "rows": rows, "checks": checks,
                             "runs": [{k: v for k, v in run.items() if k != "cases"} | {"cases": {
                                 n: {k: v for k, v in c.items() if k != "windows"} for n, c in run["cases"].items()}}
                                      for run in runs],
                             "note": "ops per dispatch: FMA 2 flop per fma; decode 4 ops (shift, mask, convert, fma) "
                                     "per 4-bit code; minimum over trials and rounds"})


if __name__ == "__main__":
    main()
