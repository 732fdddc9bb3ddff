"""Dispatches a prompt step records on a GPU's kernels, with the batch fusions off and on (machine-independent).

A dispatch count depends on the kernels a step takes, not on the card: on a CPU adapter the engine is made to run
a GPU's kernels (`cpu_kernels = False`: the tiled matmul, the blocks attention), so lavapipe counts what an H100
records. Off: the batch's RMSNorms and RoPE in dispatches of their own (`Forward.fuse_batch_norm`, `fuse_rope`);
on: folded into the tiled matmul (the default); the last token's logits of both, compared (the norm in the tiled
product is not rmsnorm.wgsl's bits), and beside them the tiled product's against the matvec's (another order of the
same sums, `tiled.MIN_TOKENS` None): how far a rounding-sized change moves each KV mode. Prints a table and writes
JSON.

    python bench/prompt_dispatches.py [--model PATH] [--kv f32,q4res] [--tokens 512]
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import numpy as np
from results_file import write_results

from bonsai.engine.native import load_engine
from bonsai.gpu.device import Gpu
from bonsai.ops import tiled

TEXT = "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined type. "


def count(engine, ids: list[int], fused: bool) -> tuple[int, np.ndarray]:
    """(dispatches, the last token's logits) of one prompt step of `ids` from position 0, batch fusions on or off."""
    engine.reset()
    engine.model.fuse_batch_norm = engine.model.fuse_rope = fused
    before = engine.gpu.dispatch_count
    engine.model.record(ids, 0, all_logits=False)
    n = engine.gpu.dispatch_count - before
    engine.cache.sync_host()
    return n, np.array(engine.model.read_logits(1), np.float32)[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="GGUF path (default: the embedded default model)")
    p.add_argument("--kv", default="f32,q4res", help="KV modes, comma-separated")
    p.add_argument("--tokens", type=int, default=512, help="prompt tokens (one step)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "prompt_dispatches.json"))
    a = p.parse_args()
    gpu = Gpu.create()
    gpu.cpu_kernels = False  # a GPU's kernels, whatever the adapter
    rows = []
    for kv in a.kv.split(","):
        engine = load_engine(a.model, gpu=gpu, kv=kv, batch=a.tokens, max_positions=2 * a.tokens, progress=False)
        ids = (engine.tokenizer.encode(TEXT) * a.tokens)[:a.tokens]
        (off, logits_off), (on, logits_on) = count(engine, ids, False), count(engine, ids, True)
        least, tiled.MIN_TOKENS = tiled.MIN_TOKENS, None  # the matvec for the batch (fusions off: it has none)
        try:
            logits_matvec = count(engine, ids, False)[1]
        finally:
            tiled.MIN_TOKENS = least
        rows.append({"kv": kv, "tokens": a.tokens, "layers": engine.cfg.n_layers, "dispatches_off": off,
                     "dispatches_on": on, "per_token_off": off / a.tokens, "per_token_on": on / a.tokens,
                     "argmax_off": int(logits_off.argmax()), "argmax_on": int(logits_on.argmax()),
                     "max_abs_logit_diff": float(np.abs(logits_on - logits_off).max()),
                     "max_abs_logit_diff_matvec": float(np.abs(logits_matvec - logits_off).max()),
                     "max_abs_logit": float(np.abs(logits_off).max())})
    print(f"{gpu.description} (running a GPU's kernels): one {a.tokens}-token prompt step")
    print("| kv | fusions off | on | per prompt token off | on | next token off / on | max abs logit diff on-off "
          "(of max) | matvec-tiled |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
    for r in rows:
        print(f"| {r['kv']} | {r['dispatches_off']} | {r['dispatches_on']} | {r['per_token_off']:.3f} | "
              f"{r['per_token_on']:.3f} | {r['argmax_off']} / {r['argmax_on']} | "
              f"{r['max_abs_logit_diff']:.2e} ({r['max_abs_logit']:.1f}) | {r['max_abs_logit_diff_matvec']:.2e} |")
    write_results(Path(a.out), {"device": gpu.description, "host": platform.node(), "rows": rows})


if __name__ == "__main__":
    main()
