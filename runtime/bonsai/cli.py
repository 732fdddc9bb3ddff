"""The `bonsai` command line: one click group; each subcommand lives in its own module."""

from __future__ import annotations

import sys

import click

from . import __version__
from .errors import BonsaiError


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


@main.command()
def doctor() -> None:
    """Show the GPU adapter and the default model this machine would use."""
    from .gpu.device import Gpu
    from .models import default_model_path

    gpu = Gpu.create()
    click.echo(f"gpu:   {gpu.description}")
    path = default_model_path()
    click.echo(f"model: {path} ({path.stat().st_size / 1e6:.1f} MB)")


from .kv.measure_cli import measure  # noqa: E402
from .kv.verify import verify  # noqa: E402

main.add_command(measure)
main.add_command(verify)

from .info import info  # noqa: E402

main.add_command(info)

from .tools.cli import tools_group, with_tools_option  # noqa: E402

main.add_command(tools_group)

from .commands.eval import eval_cmd  # noqa: E402
from .commands.run import chat, run  # noqa: E402

main.add_command(run)
main.add_command(with_tools_option(chat))
main.add_command(eval_cmd)


if __name__ == "__main__":  # pragma: no cover
    main()
