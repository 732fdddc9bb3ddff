"""Subcommands of the `bonsai` CLI that run a model (run, chat, eval)."""
