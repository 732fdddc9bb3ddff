"""Errors of the tool-calling package: bad tool definitions, bad arguments, refused calls."""

from __future__ import annotations

from ..errors import BonsaiError


class ToolError(BonsaiError):
    """Base of every tool-calling error; the message is written so it can be fed back to a model."""


class ToolDefinitionError(ToolError):
    """A function or raw schema cannot become a supported tool; names the tool and the parameter."""


class ToolArgumentError(ToolError):
    """Arguments do not match the tool's schema; the message names the JSON path that failed."""


class ToolExecutionError(ToolError):
    """A tool ran and refused or failed (division by zero, a path outside the root, ...)."""
