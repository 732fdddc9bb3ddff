"""`python -m bonsai` runs the CLI."""

from .cli import main

main()
