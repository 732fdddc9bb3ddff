"""What a dispatch costs on this adapter when it does nothing: with a barrier before it, and without.

N dispatches of a kernel whose invocation 0 adds one to a buffer's first word, in one compute pass,
timed from submit to idle (roofline_probe.timed: best of 3, net of an empty round trip). "chained": every dispatch binds the
same buffer, so wgpu orders each after the last with a barrier (as a decode step's dependent kernels
are). "independent": each binds a buffer of its own, used before in an earlier submit, so nothing in
the pass needs a barrier. The counters are read back and checked, so a dispatch that did not run shows.
Prints a table and writes JSON.

    python bench/dispatch_floor_probe.py [--n 200] [--out bench/results/dispatch_floor.json]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
from results_file import write_results  # bench/, beside this script
from roofline_probe import timed  # bench/: `reps` calls in one pass, best of 3, net of an empty round trip
from wgsl_file import load_kernel

from bonsai.gpu.device import Gpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="dispatches per trial")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dispatch_floor.json"))
    args = ap.parse_args()
    gpu = Gpu.create()
    kernel = load_kernel(gpu, "dispatch_floor.wgsl")
    n = args.n
    shared = gpu.buffer(16)
    own = [gpu.buffer(16) for _ in range(n)]
    for buf in [shared, *own]:  # first use in an earlier submit: no state change inside the timed pass
        gpu.dispatch(kernel, [buf], (1,))
    gpu.wait()
    rows = []
    for groups in (1, 132, 1056):
        for label, bufs in (("chained", [shared]), ("independent", own)):
            cycle = itertools.cycle(bufs)
            s = timed(gpu, lambda cycle=cycle, groups=groups: gpu.dispatch(kernel, [next(cycle)], (groups,)), n)
            rows.append({"case": f"{label}, {groups} workgroups", "dispatches": n, "us_per_dispatch": s * 1e6})
    got = np.frombuffer(gpu.read(shared, 4), dtype=np.uint32)[0]
    want = 1 + 3 * (1 + 3 * n)  # the first use, then per workgroup count `timed`'s warm-up call and 3 x n
    if got != want:
        raise SystemExit(f"the shared counter is {got}, expected {want}: dispatches were lost")
    print(f"adapter: {gpu.adapter.info.get('device', '?')} ({gpu.adapter.info.get('backend_type', '?')})")
    print("| case | dispatches | us per dispatch |\n| --- | ---: | ---: |")
    for r in rows:
        print(f"| {r['case']} | {r['dispatches']} | {r['us_per_dispatch']:.2f} |")
    write_results(args.out, {"rows": rows})


if __name__ == "__main__":
    main()
