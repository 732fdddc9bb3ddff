"""Tool calling: declared tools, a split-proof streaming parser, constrained decoding, the loop.

Pure Python throughout, constrained decoding included, so the browser surface runs all of it. The
constrained-decoding names (ToolCallConstraint, TokenTrie, vocabulary) load on first use: a loop
without constraints never builds the matcher.
"""

from __future__ import annotations

from typing import Any

from .builtin import BUILTIN_NAMES, builtin_registry, builtin_tool
from .errors import ToolArgumentError, ToolDefinitionError, ToolError, ToolExecutionError
from .events import TextEvent, ToolCallEvent, ToolErrorEvent, coalesce
from .loop import LoopResult, LoopStep, ToolLoop
from .parser import ToolCallParser, parse_text
from .prompt import ToolPrompt
from .registry import Tool, ToolRegistry, ToolResult, tool


def __getattr__(name: str) -> Any:
    """Constrained decoding loads on first use; literal imports so bonsai-sync sees them."""
    if name in ("ToolCallConstraint", "vocabulary"):
        from . import constrain

        return getattr(constrain, name)
    if name == "TokenTrie":
        from .trie import TokenTrie

        return TokenTrie
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BUILTIN_NAMES",
    "LoopResult",
    "LoopStep",
    "TextEvent",
    "TokenTrie",
    "Tool",
    "ToolArgumentError",
    "ToolCallConstraint",
    "ToolCallEvent",
    "ToolCallParser",
    "ToolDefinitionError",
    "ToolError",
    "ToolErrorEvent",
    "ToolExecutionError",
    "ToolLoop",
    "ToolPrompt",
    "ToolRegistry",
    "ToolResult",
    "builtin_registry",
    "builtin_tool",
    "coalesce",
    "parse_text",
    "tool",
    "vocabulary",
]
