"""Decode speed of two KV modes in one process, alternating round by round: their ratio without the drift between runs.

Separate `decode_bench.py` runs of two modes sit ~20 s apart on a shared GPU, and a neighbour's load can change
in between (rows 10-25% apart, bench/NOTES.md). Here one engine per mode is loaded on the same device (warmed up
at load, as `bonsai run` does) and prefilled with the same prompt; then every round decodes --new-tokens greedy
tokens after the prompt in each engine in turn, the order flipping every round, in blocks of resident steps as
`decode_bench.py` and `Engine.generate` do. Every round rewinds to the prompt and decodes the same positions, so
every round of one mode must produce the same tokens (checked). Round 1 holds each mode's first recordings (the
steps' tapes, a grouped mode's first group fill); later rounds replay them. Each round also probes the cost of
an empty dispatch (the machine's load). Prints a table and writes JSON.

    python bench/probes/kv_pair_bench.py [--model PATH] [--modes f32,q4res] [--prompt-tokens 1024] [--new-tokens 256]
                                  [--rounds 8]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from counters import dispatch_cost_us  # noqa: E402
from resident_profile import PROMPT, decode  # noqa: E402
from results_file import write_results  # noqa: E402

from bonsai.engine.native import load_engine  # noqa: E402


def decode_round(engine, prompt_len: int, first: int, tokens: int, resident: int) -> tuple[float, list[int]]:
    """(seconds, tokens) of decoding `tokens` greedy tokens after the prompt, from its argmax `first`."""
    engine.rewind(prompt_len)
    out: list[int] = []
    t0 = time.perf_counter()
    decode(engine, first, tokens, resident, on_block=out.extend)
    return time.perf_counter() - t0, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--modes", default="f32,q4res", help="two KV modes, comma-separated (the ratio is second / first)")
    p.add_argument("--prompt-tokens", type=int, default=1024)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--resident-steps", type=int, default=16)
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "kv_pair_bench.json"))
    a = p.parse_args()
    modes = a.modes.split(",")
    if len(modes) != 2:
        raise SystemExit(f"--modes takes two KV modes, got {a.modes!r}")
    engines = {}
    gpu = None
    for mode in modes:
        engines[mode] = load_engine(a.model, gpu=gpu, kv=mode, progress=False, warm_up=True,
                                    resident_steps=a.resident_steps,
                                    max_positions=max(2048, a.prompt_tokens + a.new_tokens))
        gpu = engines[mode].gpu
    first_engine = engines[modes[0]]
    ids = (first_engine.tokenizer.encode(PROMPT) * (a.prompt_tokens // 8 + 1))[: a.prompt_tokens]
    starts = {mode: e.prefill_argmax(ids) for mode, e in engines.items()}
    rows, tokens = [], {}
    for r in range(1, a.rounds + 1):
        order = modes if r % 2 else modes[::-1]
        probe = dispatch_cost_us(gpu)
        speed = {}
        for mode in order:
            seconds, out = decode_round(engines[mode], len(ids), starts[mode], a.new_tokens, a.resident_steps)
            if tokens.setdefault(mode, out) != out:
                raise SystemExit(f"{mode}: round {r} decoded other tokens than round 1 from the same prompt")
            speed[mode] = a.new_tokens / seconds
        rows.append({"round": r, "order": order, "probe_us": (probe + dispatch_cost_us(gpu)) / 2,
                     **{f"{m}_tok_s": speed[m] for m in modes}, "ratio": speed[modes[1]] / speed[modes[0]]})
    later = [row["ratio"] for row in rows[1:]]
    print(f"{gpu.description}: decode {a.new_tokens} tokens after {len(ids)}, {a.resident_steps} steps per "
          f"readback, {modes[1]} / {modes[0]} by round (round 1 holds the first recordings)")
    print(f"| round | first | {modes[0]} tok/s | {modes[1]} tok/s | {modes[1]} / {modes[0]} | empty dispatch us |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['round']} | {row['order'][0]} | {row[f'{modes[0]}_tok_s']:.1f} | {row[f'{modes[1]}_tok_s']:.1f} "
              f"| {row['ratio']:.3f} | {row['probe_us']:.2f} |")
    summary = {"round_1": rows[0]["ratio"]}
    if later:
        summary.update(later_mean=statistics.mean(later), later_median=statistics.median(later),
                       later_min=min(later), later_max=max(later))
        print(f"rounds 2-{a.rounds}: mean {summary['later_mean']:.3f}, median {summary['later_median']:.3f}, "
              f"range {summary['later_min']:.3f}-{summary['later_max']:.3f}; round 1: {summary['round_1']:.3f}")
    write_results(a.out, {"device": gpu.description, "modes": modes, "prompt_tokens": len(ids),
                          "new_tokens": a.new_tokens, "resident_steps": a.resident_steps, "rounds": rows,
                          "ratio": summary})


if __name__ == "__main__":
    main()
