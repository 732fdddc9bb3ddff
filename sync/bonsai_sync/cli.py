"""The `bonsai-sync` command line."""

from __future__ import annotations

import click

from . import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bonsai-sync")
def main() -> None:
    """Keep every surface's copy of the runtime exactly its import closure."""
