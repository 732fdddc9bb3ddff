"""Shared tools."""

from . import more
