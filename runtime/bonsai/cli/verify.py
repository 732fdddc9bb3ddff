"""`bonsai verify attention|model`: the exactness matrix, the mutation checks and long forced decoding on this GPU."""

from __future__ import annotations

import dataclasses
import sys
import time

import click

from ..kv.attention.driver import VARIANTS


@click.group()
def verify() -> None:
    """Run the runtime's self-checks on the current device (exit 1 if any fails)."""


@verify.command()
@click.option("--kv-len", default=64, show_default=True, help="Cached positions per case (window sizes 1..kv-len).")
@click.option("--prefill", default=16, show_default=True, help="Tokens in the causal prefill block.")
@click.option("--variant", type=click.Choice(["auto", *VARIANTS]), default="auto", show_default=True,
              help="Attention kernel variant (auto: serial on CPU adapters, blocks on GPUs).")
@click.option("--long/--no-long", default=True, show_default=True,
              help="Also check caches of several default-size windows at the default model's shapes.")
def attention(kv_len: int, prefill: int, variant: str, long: bool) -> None:
    """Windowed == whole-cache attention, bit for bit, fp64-bounded; and six injected bugs caught."""
    from ..diagnostics.exactness import (
        LONG_KV_LEN,
        LONG_WINDOWS,
        check_mutation,
        long_cases,
        matrix,
        run_long,
        run_matrix,
    )
    from ..gpu.device import Gpu
    from ..gpu.probe import loop_cap
    from ..kv.attention.driver import Attention, Mutations, default_variant

    if not 1 <= prefill < kv_len:
        raise click.BadParameter(f"must be between 1 and kv-len - 1 ({kv_len - 1})", param_hint="--prefill")
    gpu = Gpu.create()
    variant = default_variant(gpu) if variant == "auto" else variant
    click.echo(f"device: {gpu.description}; attention variant: {variant}")
    cap = loop_cap(gpu)
    span = Attention(gpu, 9, 3, 64, "f32", variant=variant).max_span(1)
    click.echo(f"loop iterations per invocation: {'not capped' if cap is None else f'capped at {cap}'}; "
               f"one fold dispatch covers at most {span} positions (head_dim 64)")
    failed = 0
    t0 = time.perf_counter()
    for r in run_matrix(gpu, matrix(kv_len, prefill=prefill), variant=variant):
        failed += not r.ok
        click.echo(f"{'ok  ' if r.ok else 'FAIL'} {r.describe()}")
    click.echo(f"exactness matrix: window sizes 1..{kv_len}, {time.perf_counter() - t0:.1f} s")
    if long:
        t0 = time.perf_counter()
        for r in run_long(gpu, long_cases(), variant=variant):
            failed += not r.ok
            click.echo(f"{'ok  ' if r.ok else 'FAIL'} {r.describe()}")
        click.echo(f"long caches: {LONG_KV_LEN} positions, windows {LONG_WINDOWS[0]} and {LONG_WINDOWS[1]} against "
                   f"one, {time.perf_counter() - t0:.1f} s")
    for f in dataclasses.fields(Mutations):
        results = check_mutation(gpu, Mutations(**{f.name: True}), kv_len, prefill, variant)
        caught = [r for r in results if not r.ok]
        failed += not caught
        how = f"caught by {len(caught)}/{len(results)} cases" if caught else "NOT CAUGHT"
        click.echo(f"{'ok  ' if caught else 'FAIL'} mutation {f.name}: {how}")
    click.echo("attention: all checks passed" if not failed else f"attention: {failed} check(s) FAILED")
    sys.exit(1 if failed else 0)


@verify.command()
@click.option("--model", "model", type=click.Path(dir_okay=False), default=None,
              help="GGUF file (default: the embedded default model).")
@click.option("--tokens", type=click.IntRange(16), default=None,
              help="Tokens of real text to force-decode (default: 1100, several windows' worth).")
@click.option("--kv", "kv_modes", multiple=True, default=("f32", "q4res"), show_default=True,
              help="KV modes to check (repeat the option for several).")
@click.option("--window", "windows", type=click.IntRange(1), multiple=True, default=None,
              help="KV windows to check (repeat; default: 2048, and one that splits the text in three).")
def model(model: str | None, tokens: int | None, kv_modes: tuple[str, ...], windows: tuple[int, ...]) -> None:
    """Force-decode real text on this device against the numpy reference forward (exit 1 if off).

    Each KV mode and window runs the same tokens (batched prefill steps, then one-token decode steps)
    and must agree on the argmax at >= 99% of positions with |Δ log-prob| <= 1e-3 everywhere, so you
    can see whether to trust this driver at long contexts.
    """
    from ..diagnostics import long_forced as lf
    from ..diagnostics.numpy_cache import NumpyKVCache
    from ..engine.native import load_engine
    from ..kv.format.modes import get_mode
    from ..reference import ReferenceModel

    for kv in kv_modes:
        get_mode(kv)  # a KVError naming the choices before minutes of work
    n = tokens or lf.TOKENS
    engine = load_engine(model, max_positions=n, cache_factory=NumpyKVCache, progress=True)
    ids = lf.long_text_ids(engine.tokenizer, n)
    windows = windows or (2048, lf.split_window(n))
    click.echo(f"device: {engine.gpu.description}; {n} tokens of real text, batch {engine.batch}, "
               f"the last {lf.DECODE_TAIL} one at a time")
    check = lf.LongForced(engine, ReferenceModel(engine.reader.path), ids, progress=lambda m: click.echo(f"  {m}"))
    failed = 0
    for kv in kv_modes:
        for window in windows:
            r = check.check(kv, window)
            failed += not r.ok
            click.echo(f"{'ok  ' if r.ok else 'FAIL'} {r.describe()}")
    click.echo("model: all checks passed" if not failed else f"model: {failed} check(s) FAILED")
    sys.exit(1 if failed else 0)
