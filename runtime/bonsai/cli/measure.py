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
@click.option("--quality-lengths", default="128,512", show_default=True,
              help="Context lengths of the per-mode quality table (comma-separated; the longest sets the "
                   "tokens run; 4096 takes about 2-4 minutes per mode on one CPU core).")
@click.option("--modes", default=None, help="Modes of the quality table (comma-separated; default: all).")
def kv4(as_json: bool, max_length: int, real: bool, tokens: int, quality_lengths: str, modes: str | None) -> None:
    """Attention error of 4-bit / rotated 4-bit K/V vs f32 (query at pos_base = length - 1), and a
    quality table over every cache mode (perplexity, KL and argmax changes vs f32 on real text)."""
    from ..diagnostics.measure import LENGTHS, check_not_too_clean, synthetic, table
    from ..kv.format.modes import MODES

    try:
        q_lengths = sorted({int(n) for n in quality_lengths.split(",") if n.strip()})
    except ValueError:
        raise click.BadParameter("comma-separated integers, e.g. 128,512,4096", param_hint="--quality-lengths") from None
    if not q_lengths or q_lengths[0] < 2:
        raise click.BadParameter("context lengths must be >= 2", param_hint="--quality-lengths")
    q_modes = [m.strip() for m in modes.split(",")] if modes else list(MODES)
    unknown = [m for m in q_modes if m not in MODES]
    if unknown:
        raise click.BadParameter(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)}",
                                 param_hint="--modes")
    lengths = [n for n in LENGTHS if n <= max_length] or [16]
    rows = synthetic(lengths)
    check_not_too_clean(rows)
    result: dict = {"synthetic": [dataclasses.asdict(r) for r in rows]}
    model_rows = quality_rows = None
    if real:
        try:
            from ..diagnostics.measure_model import measure_model

            model_rows = measure_model(tokens)
            result["model"] = model_rows
            from ..diagnostics.quality import measure_quality

            progress = None if as_json else (lambda msg: click.echo(f"quality: {msg}", err=True))
            quality_rows = measure_quality(q_lengths[-1], q_lengths, q_modes, progress)
            result["quality"] = quality_rows
        except ImportError as exc:  # bonsai.reference is an optional part of the install
            click.echo(f"bonsai: note: model part skipped ({exc}); synthetic part only", err=True)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(table(rows))
    if model_rows is not None:
        from ..diagnostics.measure_model import model_table

        click.echo("")
        click.echo(model_table(model_rows))
    if quality_rows is not None:
        from ..diagnostics.quality import quality_table

        click.echo("")
        click.echo(quality_table(quality_rows))
