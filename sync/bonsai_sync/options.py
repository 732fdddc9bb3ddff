"""Click options shared by several commands, each defined once and stacked where needed."""

from __future__ import annotations

import click

surface_option = click.option(
    "--surface",
    "surfaces",
    metavar="NAME",
    multiple=True,
    help="Only this surface (repeatable). Default: every surface in [tool.bonsai-sync.surfaces].",
)
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
verify_import_option = click.option(
    "--verify-import",
    is_flag=True,
    help="Also import every entry module in a `python -I` subprocess whose sys.path holds only "
    "the surface's copy and its allowed third-party packages.",
)
