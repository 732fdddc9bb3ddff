"""The `bonsai` click group: prints BonsaiError as one line with exit code 2, never a traceback."""

from __future__ import annotations

import sys

import click

from .. import __version__
from ..errors import BonsaiError


class BonsaiGroup(click.Group):
    """Prints BonsaiError as `bonsai: error: ...` with exit code 2 instead of a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except BonsaiError as exc:
            click.echo(f"bonsai: error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=BonsaiGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bonsai")
def main() -> None:
    """Bonsai: a small LLM runtime on WebGPU.

    Exit codes: 0 success, 1 a check failed, 2 bad input or configuration.
    """
