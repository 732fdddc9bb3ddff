"""Prompt tok/s with and without reading a step's first layers' rows ahead (`GpuModel.read_ahead`), interleaved.

One engine per KV mode; each round times one prefill (`Engine.prefill_argmax`, as the bench's prefill rows and
a user's first token) of every prompt length with read-ahead off, then on, so the ratio comes from one process
on one warm device. Prints a table (best and median tok/s, on / off) and writes JSON.

    python bench/read_ahead_bench.py [--model PATH] [--kv f32,q4res] [--tokens 512,2048] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from results_file import write_results

from bonsai.engine.native import load_engine

PROMPT = "The history of the printing press begins in the fifteenth century. "


def time_prefill(engine, ids: list[int], ahead: bool) -> tuple[float, int]:
    """(seconds, argmax id) of one prefill of `ids` from position 0 with read-ahead `ahead`."""
    engine.reset()
    engine.model.read_ahead = ahead
    t0 = time.perf_counter()
    tok = engine.prefill_argmax(ids)
    dt = time.perf_counter() - t0
    engine.reset()
    return dt, tok


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--kv", default="f32,q4res", help="KV modes, comma-separated")
    p.add_argument("--tokens", default="512,2048", help="prompt lengths, comma-separated (512-token steps)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "read_ahead.json"))
    a = p.parse_args()
    lengths = [int(t) for t in a.tokens.split(",")]
    rows = []
    for kv in a.kv.split(","):
        engine = load_engine(a.model, kv=kv, progress=False, warm_up=True, batch=512, max_positions=max(lengths) + 64)
        base = engine.tokenizer.encode(PROMPT)
        for n in lengths:
            ids = (base * (n // len(base) + 1))[:n]
            toks = {ahead: time_prefill(engine, ids, ahead)[1] for ahead in (False, True)}  # warm both
            runs: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(a.rounds):
                for ahead in (False, True):
                    runs[ahead].append(time_prefill(engine, ids, ahead)[0])
            row = {"kv": kv, "tokens": n, "same_argmax": toks[False] == toks[True], "device": engine.gpu.description}
            for ahead, name in ((False, "off"), (True, "on")):
                row[f"{name}_best_tok_s"] = n / min(runs[ahead])
                row[f"{name}_median_tok_s"] = n / statistics.median(runs[ahead])
                row[f"{name}_runs_s"] = runs[ahead]
            rows.append(row)
    print(f"{rows[0]['device']}: prompt tok/s, read-ahead off / on, {a.rounds} rounds interleaved")
    print("| kv | tokens | off best | on best | off median | on median | on / off (medians) | same argmax |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['kv']} | {r['tokens']} | {r['off_best_tok_s']:,.0f} | {r['on_best_tok_s']:,.0f} | "
              f"{r['off_median_tok_s']:,.0f} | {r['on_median_tok_s']:,.0f} | "
              f"{r['on_median_tok_s'] / r['off_median_tok_s']:.2f} | {r['same_argmax']} |")
    write_results(a.out, {"rounds": a.rounds, "rows": rows})


if __name__ == "__main__":
    main()
