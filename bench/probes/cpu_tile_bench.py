"""CPU matmul tile benchmark: the default model's prefill chunk and decode speed per (rows, tokens) tile
of ops/matmul_cpu.wgsl, on a CPU adapter (lavapipe), the tiles interleaved round after round so a
shared machine's load falls on all of them alike.

Each measurement runs in its own process (the tile is a module constant read when kernels compile).
Prints a table of the best time per tile and writes bench/results/cpu_tile_bench.json.
    python bench/probes/cpu_tile_bench.py --tiles 4x4,8x4 --rounds 2
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

from results_file import write_results  # noqa: E402

CHILD = """
import json, sys, time
import bonsai.ops.matmul as mm
mm.CPU_ROWS, mm.CPU_TOKENS = {rows}, {tokens}
from bonsai.engine.native import load_engine
eng = load_engine(None, progress=False)
ids = list(range(1000, 1000 + {chunk}))
eng.reset(); eng.forward(ids)  # compiles every kernel
eng.reset(); t0 = time.perf_counter(); eng.forward(ids); prefill = time.perf_counter() - t0
g = eng.generate(ids[:16], max_tokens={decode})
print(json.dumps({{"prefill_s": prefill, "decode_tok_s": g.decode_tokens_per_s, "adapter": eng.gpu.description}}))
"""


def measure(rows: int, tokens: int, chunk: int, decode: int) -> dict:
    code = CHILD.format(rows=rows, tokens=tokens, chunk=chunk, decode=decode)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", default="4x4,8x4", help="rows x tokens per invocation, comma-separated")
    ap.add_argument("--rounds", type=int, default=2, help="measurements per tile (interleaved)")
    ap.add_argument("--chunk", type=int, default=128, help="tokens in the timed prefill step")
    ap.add_argument("--decode", type=int, default=16, help="tokens decoded for the decode rate")
    ap.add_argument("--out", default="bench/results/cpu_tile_bench.json")
    a = ap.parse_args()
    tiles = [tuple(int(x) for x in t.split("x")) for t in a.tiles.split(",")]
    runs: dict[str, list[dict]] = {f"{r}x{t}": [] for r, t in tiles}
    for i in range(a.rounds):
        for r, t in tiles:
            res = measure(r, t, a.chunk, a.decode)
            runs[f"{r}x{t}"].append(res)
            print(f"round {i + 1} tile {r}x{t}: prefill {res['prefill_s']:.1f} s, decode {res['decode_tok_s']:.2f} tok/s",
                  flush=True)
    base = min(x["prefill_s"] for x in runs[next(iter(runs))])
    print(f"\n{'tile':>6} {'best prefill s':>15} {'prefill tok/s':>14} {'vs first':>9} {'best decode tok/s':>18}")
    rows = []
    for name, rs in runs.items():
        p = min(x["prefill_s"] for x in rs)
        d = max(x["decode_tok_s"] for x in rs)
        rows.append({"tile": name, "prefill_s": p, "prefill_tok_s": a.chunk / p, "decode_tok_s": d, "runs": rs})
        print(f"{name:>6} {p:>15.1f} {a.chunk / p:>14.2f} {base / p:>8.2f}x {d:>18.2f}")
    write_results(a.out, {"chunk": a.chunk, "rounds": a.rounds, "time": time.time(), "tiles": rows})


if __name__ == "__main__":
    main()
