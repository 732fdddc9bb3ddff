"""Tools (a name, a description, a parameters schema, a function) and the registry that runs them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import ToolArgumentError, ToolDefinitionError, ToolError
from .schema import function_schema
from .validate import check_supported, errors

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Tool:
    """One callable tool; `parameters` is a JSON Schema object (the supported subset)."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ToolDefinitionError(f"tool {self.name!r}: names are letters, digits, _ . - (max 64)")
        check_supported(self.parameters, f"tool {self.name!r} parameters")
        if self.parameters.get("type") != "object":
            raise ToolDefinitionError(f"tool {self.name!r}: parameters must be a schema of type object")

    def spec(self) -> dict[str, Any]:
        """The OpenAI/Hermes function description that goes into the `<tools>` block."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def validate(self, arguments: Any) -> None:
        """Raise ToolArgumentError naming every failing JSON path."""
        problems = errors(arguments, self.parameters)
        if problems:
            raise ToolArgumentError(
                f"arguments for {self.name!r} do not match its schema: " + "; ".join(problems)
            )

    def __call__(self, arguments: dict[str, Any]) -> Any:
        self.validate(arguments)
        if self.fn is None:
            raise ToolError(f"tool {self.name!r} has no function to run")
        return self.fn(**arguments)


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Decorator: a Tool from a typed, documented function (`@tool` or `@tool(name="x")`)."""

    def make(f: Callable[..., Any]) -> Tool:
        tool_name, description, parameters = function_schema(f, name)
        return Tool(tool_name, description, parameters, f)

    return make(fn) if fn is not None else make


@dataclass(frozen=True)
class ToolResult:
    """What one call produced: `content` is the text that goes back in a <tool_response> turn."""

    id: str
    name: str
    content: str
    ok: bool


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class ToolRegistry:
    """The declared tools, by name, in declaration order."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool | Callable[..., Any]) -> Tool:
        """Register a Tool, or a typed function (turned into one); duplicate names are errors."""
        made = t if isinstance(t, Tool) else tool(t)
        if made.name in self._tools:
            raise ToolDefinitionError(f"tool {made.name!r} is declared twice")
        self._tools[made.name] = made
        return made

    def get(self, name: str) -> Tool:
        if name not in self._tools:
            raise ToolError(f"unknown tool {name!r}; declared tools: {', '.join(self._tools) or '(none)'}")
        return self._tools[name]

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def run(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call; any failure becomes a ToolResult with ok=False whose text names the problem."""
        try:
            return ToolResult(call_id, name, _as_text(self.get(name)(arguments)), True)
        except ToolError as exc:
            return ToolResult(call_id, name, f"error: {exc}", False)
        except Exception as exc:  # noqa: BLE001 - a tool's own bug is reported to the model, not raised
            return ToolResult(call_id, name, f"error: {name} failed: {type(exc).__name__}: {exc}", False)
