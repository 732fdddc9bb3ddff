"""The `bonsai-sync` command line: parse arguments, call a command, map errors to exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .errors import FatalError, UsageError
from .fsutil import shown
from .options import format_option, global_options, surface_option, verify_import_option


class _Group(click.Group):
    """The one place where an error becomes one line on stderr and its exit code, never a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except FatalError as exc:
            for line in exc.diagnostics:
                click.echo(line if not isinstance(line, str) else f"bonsai-sync: error: {line}", err=True)
            sys.exit(exc.exit_code)
        except OSError as exc:
            root = (ctx.obj or {}).get("root")
            where = shown(exc.filename, root) + ": " if exc.filename else ""
            click.echo(f"bonsai-sync: error: {where}{exc.strerror or exc}; the surface was left as it was", err=True)
            sys.exit(2)
        except RecursionError:
            click.echo("bonsai-sync: error: the tree is nested too deeply to follow (Python's recursion limit); "
                       "the surface was left as it was", err=True)
            sys.exit(3)


def _workspace(ctx: click.Context):
    from .pipeline import Workspace

    return Workspace(ctx.obj["root"], use_cache=not ctx.obj["no_cache"], rescan=ctx.obj["rescan"])


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bonsai-sync")
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The repository whose pyproject.toml holds [tool.bonsai-sync]. Default: the nearest such "
    "pyproject.toml in the current directory or a parent (as git finds .git).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the scan cache (.bonsai-sync-cache/); the "
              "facts each surface's bonsai-sync.lock records for unchanged files are still used.")
@click.option("--rescan", is_flag=True, help="Parse every source file: trust no scan facts from the cache or a lock.")
@click.option("--wait", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds to wait for another bonsai-sync holding a surface's lock.")
@click.pass_context
def main(ctx: click.Context, root: Path | None, no_cache: bool, rescan: bool, wait: float) -> None:
    """Keep every surface's copy of the runtime exactly its import closure.

    Reads [tool.bonsai-sync] from pyproject.toml: `source` roots hold the first-party
    packages; each [tool.bonsai-sync.surfaces.NAME] names a `dest` and the `entry` modules
    whose closure it needs. Errors print as `path:line:col: message`, paths relative to the
    repository root.

    Exit codes: 0 ok, 1 stale (check), or hand edits or files it did not write refused (sync,
    build), 2 usage, configuration or file-system error, 3 closure or verification error.
    """
    from .config import find_root

    ctx.obj = {"root": root if root is not None else find_root(Path.cwd()), "no_cache": no_cache, "rescan": rescan,
               "wait": wait}


@main.command()
@global_options
@surface_option
@click.option("--dry-run", is_flag=True, help="List every file it would write, remove or refuse; write nothing.")
@click.option("--force", is_flag=True, help="Overwrite files edited by hand in the surface.")
@click.option("--keep-foreign", "foreign", flag_value="keep",
              help="Keep the files in a dest that bonsai-sync did not write (each is listed, recorded as the "
              "user's in bonsai-sync.lock, and left alone from then on).")
@click.option("--delete-foreign", "foreign", flag_value="delete",
              help="Delete the files in a dest that bonsai-sync did not write, listing each.")
@verify_import_option
@click.pass_context
def sync(ctx: click.Context, surfaces: tuple[str, ...], dry_run: bool, force: bool, foreign: str | None,
         verify_import: bool) -> None:
    """Copy each surface's closure into its dest, then verify the copy.

    The copy is written to a temporary directory, verified there (every import it makes must
    resolve inside it, to the stdlib, or to an allowed third-party name) and only then swapped
    in, so a failure leaves the surface untouched. Files no longer needed are removed, and
    <dest>/bonsai-sync.lock records every file's source and sha256. A file edited by hand in the
    surface is never overwritten without --force (exit 1, naming each).

    A dest is bonsai-sync's: any file in it that the lock does not record (there before the first
    sync, or added later) is refused (exit 1, naming each, nothing written) unless --keep-foreign
    or --delete-foreign says what to do with it. --dry-run refuses exactly as the sync would.
    """
    from . import commands

    sys.exit(commands.sync(_workspace(ctx), surfaces, dry_run, verify_import, force, ctx.obj["wait"],
                           foreign or "refuse"))


@main.command()
@global_options
@surface_option
@click.option("--diff", "show_diff", is_flag=True, help="Show a unified diff for each stale file.")
@click.option("--staged", is_flag=True, help="Check what is staged for commit (git's index), not the working tree.")
@format_option
@click.pass_context
def check(ctx: click.Context, surfaces: tuple[str, ...], show_diff: bool, staged: bool, fmt: str) -> None:
    """Exit 1 if any surface differs from what `sync` would write; write nothing.

    Each stale file is named with why: changed upstream, missing, extra, or edited by hand
    in the surface (its bytes differ from bonsai-sync.lock). With --staged the sources and the
    surfaces are read from git's index, so a commit is checked as a fresh clone of it would be.
    """
    from . import commands

    if staged:
        from .staged import check_staged

        sys.exit(check_staged(ctx.obj["root"], surfaces, fmt, ctx.obj["wait"]))
    sys.exit(commands.check(_workspace(ctx), surfaces, show_diff, fmt, ctx.obj["wait"]))


@main.command()
@global_options
@click.argument("surface")
@click.argument("target", metavar="MODULE_OR_FILE")
@click.pass_context
def why(ctx: click.Context, surface: str, target: str) -> None:
    """Show the shortest import chain from an entry of SURFACE to MODULE_OR_FILE.

    Each hop names the import site as file:line:col; a last line says what became of a module
    that is not simply copied (excluded, compiled, third-party) or where a file came from
    (a `data` glob, a `hidden-imports` hint, a distribution's metadata).
    """
    from . import commands

    sys.exit(commands.why(_workspace(ctx), surface, target))


@main.command()
@global_options
@click.argument("surface")
@click.option("--format", "fmt", type=click.Choice(["json", "dot"]), default="json", show_default=True, help="Output format.")
@click.pass_context
def graph(ctx: click.Context, surface: str, fmt: str) -> None:
    """Print the closure graph of SURFACE (modules, resources and import sites)."""
    from . import commands

    sys.exit(commands.graph(_workspace(ctx), surface, fmt))


@main.command()
@global_options
@surface_option
@click.option("--dist", "dist_dir", type=click.Path(file_okay=False, path_type=Path), default="dist",
              show_default=True, help="Where the bundles go (relative to --root).")
@click.pass_context
def build(ctx: click.Context, surfaces: tuple[str, ...], dist_dir: Path) -> None:
    """Sync, check, then build each surface's bundle reproducibly; print where it went and its size.

    Builds the surfaces whose config declares a bundle kind (`bundle = "zipapp"`, "wheel" or
    "extension", from `bundle-project`, else the nearest folder above the dest holding a
    pyproject.toml); a surface without one is an error (exit 2). Refuses (exit 1), naming the
    files, when a surface's copy was edited by hand or is still stale after the sync.
    """
    from . import commands
    from .bundle import build_surface, describe, workspace_gate

    ws = _workspace(ctx)
    names = surfaces or tuple(s.name for s in ws.config.surfaces if s.bundle)
    unbuildable = [name for name in names if not ws.config.surface(name).bundle]
    if unbuildable or not names:
        raise UsageError(f"no bundle kind for surface(s) {', '.join(unbuildable or [s.name for s in ws.config.surfaces])}: "
                         "declare one with `bundle = \"zipapp\"`, \"wheel\" or \"extension\" in "
                         "[tool.bonsai-sync.surfaces.NAME]; `build` builds only those (`sync` needs none)")
    code = commands.sync(ws, names, False, False, False, ctx.obj["wait"])
    if code:
        sys.exit(code)
    dist = dist_dir if dist_dir.is_absolute() else ws.root / dist_dir
    gate = workspace_gate(ws)
    for name in names:
        click.echo(f"{name}: {describe(build_surface(ws.config, name, dist, check_fresh=gate), ws.root)}")
