"""`bonsai measure kv4`: the click command (imports numpy only when it runs)."""

from __future__ import annotations

import dataclasses
import json

import click


@click.group()
def measure() -> None:
    """Measurements users can re-run: a table, or JSON with --json."""


@measure.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--max-length", default=4096, show_default=True, help="Longest context (powers of two from 16).")
@click.option("--real/--no-real", default=True, show_default=True,
              help="Also run the default model on real text (needs bonsai.reference).")
@click.option("--tokens", default=256, show_default=True, help="Real-text tokens for the model part.")
def kv4(as_json: bool, max_length: int, real: bool, tokens: int) -> None:
    """Attention error of 4-bit / rotated 4-bit K/V vs f32, query at pos_base = length - 1."""
    from .measure import LENGTHS, check_not_too_clean, synthetic, table

    lengths = [n for n in LENGTHS if n <= max_length] or [16]
    rows = synthetic(lengths)
    check_not_too_clean(rows)
    result: dict = {"synthetic": [dataclasses.asdict(r) for r in rows]}
    model_rows = None
    if real:
        try:
            from .measure_model import measure_model

            model_rows = measure_model(tokens)
            result["model"] = model_rows
        except ImportError as exc:  # bonsai.reference is an optional part of the install
            click.echo(f"bonsai: note: model part skipped ({exc}); synthetic part only", err=True)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(table(rows))
    if model_rows is not None:
        from .measure_model import model_table

        click.echo("")
        click.echo(model_table(model_rows))
