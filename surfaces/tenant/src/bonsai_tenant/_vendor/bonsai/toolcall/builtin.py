"""The built-in tools by name, and a registry built from a comma-separated selection."""

from __future__ import annotations

from pathlib import Path

from .calculator import calculator
from .clock import make_clock
from .errors import ToolDefinitionError
from .files import make_file_lookup
from .registry import Tool, ToolRegistry

BUILTIN_NAMES = ("calculator", "clock", "read_file")


def builtin_tool(name: str, root: str | Path | None = None) -> Tool:
    """One built-in tool; `read_file` needs `root`, the only directory it may read."""
    if name == "calculator":
        return calculator
    if name == "clock":
        return make_clock()
    if name == "read_file":
        if root is None:
            raise ToolDefinitionError("tool 'read_file' needs a directory: pass root= (CLI: --root DIR)")
        return make_file_lookup(root)
    raise ToolDefinitionError(f"unknown built-in tool {name!r}; choose from {', '.join(BUILTIN_NAMES)}")


def builtin_registry(names: str | list[str], root: str | Path | None = None) -> ToolRegistry:
    """A registry of the named built-ins, e.g. `builtin_registry("calculator,clock")`."""
    wanted = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    return ToolRegistry(builtin_tool(n, root) for n in wanted if n)
