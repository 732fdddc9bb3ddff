"""Tool calling: declared tools, a split-proof streaming parser, constrained decoding, the loop."""

from __future__ import annotations

from .builtin import BUILTIN_NAMES, builtin_registry, builtin_tool
from .errors import ToolArgumentError, ToolDefinitionError, ToolError, ToolExecutionError
from .registry import Tool, ToolRegistry, ToolResult, tool

__all__ = [
    "BUILTIN_NAMES",
    "Tool",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionError",
    "ToolRegistry",
    "ToolResult",
    "builtin_registry",
    "builtin_tool",
    "tool",
]
