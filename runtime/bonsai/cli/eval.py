"""`bonsai eval FILE`: forced decoding over a text: per-token log-probs, perplexity, argmax ids."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np

from ..errors import BonsaiError
from .options import load_engine, model_options


@click.command(name="eval")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@model_options
@click.option("--max-tokens", type=click.IntRange(2), default=None, help="Score only the first N tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: per position token, log-prob, argmax id.")
def eval_cmd(file: str, model: str | None, kv: str, window: int | None, vram_budget: int | None, max_positions: int,
             max_tokens: int | None, as_json: bool) -> None:
    """Score FILE's text token by token (teacher forcing) and report its perplexity."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BonsaiError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    engine = load_engine(model, kv, window, vram_budget, max_positions)
    ids = engine.tokenizer.encode(text, add_bos=engine.cfg.add_bos)[: max_tokens or None]
    if len(ids) < 2:
        raise BonsaiError(f"{file}: needs at least 2 tokens to score, has {len(ids)}")
    if len(ids) > engine.max_positions:
        raise BonsaiError(f"{file}: {len(ids)} tokens exceed --max-positions {engine.max_positions}; "
                          "raise it or pass --max-tokens")
    rows = []
    for start in range(0, len(ids) - 1, engine.batch):
        chunk = ids[start : min(start + engine.batch, len(ids) - 1)]
        logits = np.asarray(engine.forward(chunk), np.float64)
        z = logits - logits.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        for j in range(len(chunk)):
            target = ids[start + j + 1]
            rows.append({"pos": start + j + 1, "token": target, "logprob": float(logp[j, target]),
                         "argmax": int(np.argmax(logits[j]))})
    ppl = math.exp(-sum(r["logprob"] for r in rows) / len(rows))
    if as_json:
        click.echo(json.dumps({"file": file, "tokens": len(ids), "scored": len(rows), "perplexity": ppl,
                               "positions": rows}))
        return
    tok = engine.tokenizer
    for r in rows:
        click.echo(f"{r['pos']:6d} {r['logprob']:9.4f} {tok.decode([r['token']])!r}")
    click.echo(f"perplexity {ppl:.4f} over {len(rows)} tokens")
