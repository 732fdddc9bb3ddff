"""Prompt tok/s with one of the runtime's prefill switches off and on, interleaved in one process.

Switches: `read-ahead` (a prompt step reads its first layers' rows ahead, `GpuModel.read_ahead`), `split-k` (the
tiled matmul splits K of products with few tiles, `tiled.SPLIT_GROUPS`), `submit-every-layer` (a prompt step submits
after every layer, not every `forward.BATCH_SUBMIT_EVERY`), `lane-fold` (a batch's attention folds four tokens a
workgroup, `attention.driver.LANE_FOLD`), `decode-batches` (a q4res batch's windows decoded to f32 rows before the fold,
`attention.driver.DECODE_BATCHES`), `last-read-first` (a sync after reads ahead submits the read of the rest
before committing them, `kv.staging.LAST_READ_FIRST`), `drop-rows` (a q4res batch reads back only the f32 rows the
host keeps, `kv.append.DROP_QUANTISED_ROWS`), `submit-every` (a prompt step submits every `--layers` layers, not every
`forward.BATCH_SUBMIT_EVERY`), `first-submit` (a prompt step submits its first layer alone, `forward.BATCH_FIRST_SUBMIT`;
off: its first submit after BATCH_SUBMIT_EVERY layers). One engine per KV mode; each round times
one prefill (`Engine.prefill_argmax`, as the bench's prefill rows and a user's first token) of every prompt length
with the switch off, then on, so the ratio comes from one process on one warm device. Prints a table (best and
median tok/s, on / off, whether the argmax and the last token's logits bits are the same) and writes JSON.

    python bench/probes/prefill_ab.py [--switch read-ahead] [--model PATH] [--kv f32,q4res] [--tokens 512,2048] [--rounds 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results_file and the shared modules

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from results_file import write_results  # noqa: E402

from bonsai.engine.forward import BATCH_FIRST_SUBMIT, BATCH_SUBMIT_EVERY  # noqa: E402
from bonsai.engine.native import load_engine  # noqa: E402
from bonsai.kv import append, staging  # noqa: E402
from bonsai.kv.attention import driver as attention  # noqa: E402
from bonsai.ops import tiled  # noqa: E402

PROMPT = "The history of the printing press begins in the fifteenth century. "


def use(engine, switch: str, on: bool, value: int | None) -> None:
    """Turn `switch` on or off (split-k's "on": split K until a product has `value` workgroups; submit-every's: a
    submit every `value` layers)."""
    if switch == "read-ahead":
        engine.model.read_ahead = on
    elif switch == "last-read-first":
        staging.LAST_READ_FIRST = on
    elif switch == "drop-rows":
        append.DROP_QUANTISED_ROWS = on
    elif switch == "lane-fold":
        attention.LANE_FOLD = on
    elif switch == "decode-batches":
        attention.DECODE_BATCHES = on
    elif switch == "submit-every-layer":
        engine.model.batch_submit_every = 1 if on else BATCH_SUBMIT_EVERY
    elif switch == "submit-every":
        engine.model.batch_submit_every = value if on else BATCH_SUBMIT_EVERY
    elif switch == "first-submit":
        engine.model.batch_first_submit = BATCH_FIRST_SUBMIT if on else 0
    else:
        tiled.SPLIT_GROUPS = value if on else None


def time_prefill(engine, ids: list[int], switch: str, on: bool, value: int | None) -> tuple[float, int]:
    """(seconds, argmax id) of one prefill of `ids` from position 0 with `switch` on or off."""
    engine.reset()
    use(engine, switch, on, value)
    t0 = time.perf_counter()
    tok = engine.prefill_argmax(ids)
    dt = time.perf_counter() - t0
    engine.reset()
    return dt, tok


def last_logits(engine, ids: list[int], switch: str, on: bool, value: int | None) -> bytes:
    """The bytes of the last token's logits after a prefill of `ids` from position 0 with `switch` on or off."""
    engine.reset()
    use(engine, switch, on, value)
    logits = bytes(engine.prefill(ids))
    engine.reset()
    return logits


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--switch", choices=("read-ahead", "split-k", "submit-every-layer", "lane-fold", "decode-batches",
                                           "last-read-first", "drop-rows", "submit-every", "first-submit"), default="read-ahead")
    p.add_argument("--split-groups", type=int, default=None,
                   help="split-k on: split K until a product has this many workgroups (default: tiled.SPLIT_GROUPS)")
    p.add_argument("--layers", type=int, default=4, help="submit-every on: a submit every this many layers")
    p.add_argument("--model", default=None)
    p.add_argument("--kv", default="f32,q4res", help="KV modes, comma-separated")
    p.add_argument("--tokens", default="512,2048", help="prompt lengths, comma-separated (512-token steps)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=None, help="JSON path (default bench/results/prefill_ab_SWITCH.json)")
    a = p.parse_args()
    lengths = [int(t) for t in a.tokens.split(",")]
    split_groups = tiled.SPLIT_GROUPS if a.split_groups is None else a.split_groups
    value = a.layers if a.switch == "submit-every" else split_groups
    rows = []
    for kv in a.kv.split(","):
        engine = load_engine(a.model, kv=kv, progress=False, warm_up=True, batch=512, max_positions=max(lengths) + 64)
        base = engine.tokenizer.encode(PROMPT)
        for n in lengths:
            ids = (base * (n // len(base) + 1))[:n]
            toks = {on: time_prefill(engine, ids, a.switch, on, value)[1] for on in (False, True)}  # warm both
            runs: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(a.rounds):
                for on in (False, True):
                    runs[on].append(time_prefill(engine, ids, a.switch, on, value)[0])
            bits = {on: last_logits(engine, ids, a.switch, on, value) for on in (False, True)}
            row = {"kv": kv, "tokens": n, "same_argmax": toks[False] == toks[True],
                   "same_logit_bits": bits[False] == bits[True], "device": engine.gpu.description}
            for on, name in ((False, "off"), (True, "on")):
                row[f"{name}_best_tok_s"] = n / min(runs[on])
                row[f"{name}_median_tok_s"] = n / statistics.median(runs[on])
                row[f"{name}_runs_s"] = runs[on]
            rows.append(row)
    use(engine, a.switch, True, value)
    what = f"{a.switch} {a.layers}" if a.switch == "submit-every" else a.switch
    print(f"{rows[0]['device']}: prompt tok/s, {what} off / on, {a.rounds} rounds interleaved")
    print("| kv | tokens | off best | on best | off median | on median | on / off (medians) | same argmax | same logit bits |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        print(f"| {r['kv']} | {r['tokens']} | {r['off_best_tok_s']:,.0f} | {r['on_best_tok_s']:,.0f} | "
              f"{r['off_median_tok_s']:,.0f} | {r['on_median_tok_s']:,.0f} | "
              f"{r['on_median_tok_s'] / r['off_median_tok_s']:.2f} | {r['same_argmax']} | {r['same_logit_bits']} |")
    out = a.out or Path(__file__).resolve().parents[1] / "results" / f"prefill_ab_{a.switch}.json"
    write_results(out, {"switch": a.switch, "split_groups": split_groups, "layers": a.layers, "rounds": a.rounds,
                        "rows": rows})


if __name__ == "__main__":
    main()
