"""Click options shared by several commands, each defined once and stacked where needed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _late(key: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    """A callback that records an option given after the subcommand over the group's value."""

    def record(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None or value is False:
            return
        ctx.ensure_object(dict)[key] = value.resolve() if isinstance(value, Path) else value

    return record


def global_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The group's --root, --no-cache, --rescan and --wait, accepted after the subcommand too
    (`bonsai-sync check --root .`, as pre-commit's `args:` passes them)."""
    options = [
        click.option("--root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
                     expose_value=False, callback=_late("root"), is_eager=True,
                     help="As `bonsai-sync --root` (also accepted here)."),
        click.option("--no-cache", is_flag=True, default=False, expose_value=False, callback=_late("no_cache"),
                     help="As `bonsai-sync --no-cache`."),
        click.option("--rescan", is_flag=True, default=False, expose_value=False, callback=_late("rescan"),
                     help="As `bonsai-sync --rescan`."),
        click.option("--wait", type=click.FloatRange(min=0), default=None, expose_value=False, callback=_late("wait"),
                     help="As `bonsai-sync --wait`."),
    ]
    for option in reversed(options):
        command = option(command)
    return command
