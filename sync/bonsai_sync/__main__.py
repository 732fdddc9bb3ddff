"""`python -m bonsai_sync`: the same command line as the `bonsai-sync` script."""

from .cli import main

main(prog_name="bonsai-sync")
