"""Helper."""

VALUE = 42
