"""`bonsai doctor`: the GPU adapter and the default model this machine would use."""

from __future__ import annotations

import click


@click.command()
def doctor() -> None:
    """Show the GPU adapter and the default model this machine would use."""
    from ..gpu.device import Gpu
    from ..models import default_model_path

    gpu = Gpu.create()
    click.echo(f"gpu:   {gpu.description}")
    path = default_model_path()
    click.echo(f"model: {path} ({path.stat().st_size / 1e6:.1f} MB)")
