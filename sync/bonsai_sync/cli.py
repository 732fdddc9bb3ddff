"""The `bonsai-sync` command line: parse arguments, call a command, map errors to exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .errors import FatalError
from .options import format_option, surface_option, verify_import_option


class _Group(click.Group):
    """The one place where a FatalError becomes its message on stderr and its exit code."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except FatalError as exc:
            for line in exc.diagnostics:
                click.echo(line if not isinstance(line, str) else f"bonsai-sync: error: {line}", err=True)
            sys.exit(exc.exit_code)


def _workspace(ctx: click.Context):
    from .pipeline import Workspace

    return Workspace(ctx.obj["root"], use_cache=not ctx.obj["no_cache"])


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bonsai-sync")
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=".",
    show_default=True,
    help="The repository whose pyproject.toml holds [tool.bonsai-sync].",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the scan cache (.bonsai-sync-cache/).")
@click.pass_context
def main(ctx: click.Context, root: Path, no_cache: bool) -> None:
    """Keep every surface's copy of the runtime exactly its import closure.

    Reads [tool.bonsai-sync] from pyproject.toml: `source` roots hold the first-party
    packages; each [tool.bonsai-sync.surfaces.NAME] names a `dest` and the `entry` modules
    whose closure it needs. Errors print as `path:line:col: message`, paths relative to the
    repository root.

    Exit codes: 0 ok, 1 stale (check), 2 usage or configuration error,
    3 closure or verification error.
    """
    ctx.obj = {"root": root, "no_cache": no_cache}


@main.command()
@surface_option
@click.option("--dry-run", is_flag=True, help="Say what would be written and removed; write nothing.")
@verify_import_option
@click.pass_context
def sync(ctx: click.Context, surfaces: tuple[str, ...], dry_run: bool, verify_import: bool) -> None:
    """Copy each surface's closure into its dest, then verify the copy.

    The copy is written to a temporary directory, verified there (every import it makes must
    resolve inside it, to the stdlib, or to an allowed third-party name) and only then swapped
    in, so a failure leaves the surface untouched. Files no longer needed are removed, and
    <dest>/bonsai-sync.lock records every file's source and sha256.
    """
    from . import commands

    sys.exit(commands.sync(_workspace(ctx), surfaces, dry_run, verify_import))


@main.command()
@surface_option
@click.option("--diff", "show_diff", is_flag=True, help="Show a unified diff for each stale file.")
@format_option
@click.pass_context
def check(ctx: click.Context, surfaces: tuple[str, ...], show_diff: bool, fmt: str) -> None:
    """Exit 1 if any surface differs from what `sync` would write; write nothing.

    Each stale file is named with why: changed upstream, missing, extra, or edited by hand
    in the surface (its bytes differ from bonsai-sync.lock). Use it in pre-commit and CI.
    """
    from . import commands

    sys.exit(commands.check(_workspace(ctx), surfaces, show_diff, fmt))


@main.command()
@click.argument("surface")
@click.argument("target", metavar="MODULE_OR_FILE")
@click.pass_context
def why(ctx: click.Context, surface: str, target: str) -> None:
    """Show the shortest import chain from an entry of SURFACE to MODULE_OR_FILE.

    Each hop names the import site as file:line:col.
    """
    from . import commands

    sys.exit(commands.why(_workspace(ctx), surface, target))


@main.command()
@click.argument("surface")
@click.option("--format", "fmt", type=click.Choice(["json", "dot"]), default="json", show_default=True, help="Output format.")
@click.pass_context
def graph(ctx: click.Context, surface: str, fmt: str) -> None:
    """Print the closure graph of SURFACE (modules, resources and import sites)."""
    from . import commands

    sys.exit(commands.graph(_workspace(ctx), surface, fmt))


@main.command()
@surface_option
@click.option("--dist", "dist_dir", type=click.Path(file_okay=False, path_type=Path), default="dist",
              show_default=True, help="Where the bundles go (relative to --root).")
@click.pass_context
def build(ctx: click.Context, surfaces: tuple[str, ...], dist_dir: Path) -> None:
    """Sync, check, then build each surface's bundle reproducibly; print where it went and its size.

    Refuses (exit 1), naming the files, when a surface's copy was edited by hand (sync would
    overwrite the edit) or is still stale after the sync.
    """
    from . import commands
    from .build import BUILDERS, build_surface, describe, refuse_hand_edits

    ws = _workspace(ctx)
    names = surfaces or tuple(s.name for s in ws.config.surfaces if s.name in BUILDERS)
    refuse_hand_edits(ws, names)
    code = commands.sync(ws, names, False, False)
    if code:
        sys.exit(code)
    dist = dist_dir if dist_dir.is_absolute() else ws.root / dist_dir
    for name in names:
        click.echo(f"{name}: {describe(build_surface(ws.config, name, dist), ws.root)}")
