"""Python functions as tools: their OpenAI schema, and calling them with a model's arguments."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from .errors import ToolError
from .events import ToolCall

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                               list: "array", dict: "object"}


@dataclass(frozen=True)
class Tool:
    """A callable the model may ask for: name, one-line description, JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any] = field(compare=False)

    @classmethod
    def from_function(cls, function: Callable[..., Any]) -> Tool:
        """Schema from the signature (str/int/float/bool/list/dict annotations), text from the docstring."""
        hints = get_type_hints(function)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, param in inspect.signature(function).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolError(f"tool {function.__name__!r}: *args/**kwargs cannot be described to a model")
            properties[name] = {"type": _JSON_TYPES.get(hints.get(name, str), "string")}
            if param.default is param.empty:
                required.append(name)
        doc = inspect.getdoc(function) or ""
        schema = {"type": "object", "properties": properties, "required": required}
        return cls(function.__name__, doc.splitlines()[0] if doc else "", schema, function)

    def to_openai(self) -> dict[str, Any]:
        """This tool in the OpenAI `tools` request format."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description,
                             "parameters": dict(self.parameters)}}

    def call(self, call: ToolCall) -> str:
        """Run the function with the call's arguments; the result as text (JSON unless already a str)."""
        arguments = call.parsed_arguments()
        required = self.parameters.get("required", [])
        missing = [name for name in required if name not in arguments]
        if missing:
            raise ToolError(f"tool {self.name!r}: missing argument(s) {', '.join(missing)}")
        unknown = sorted(set(arguments) - set(self.parameters.get("properties", {})))
        if unknown:
            raise ToolError(f"tool {self.name!r}: unknown argument(s) {', '.join(unknown)}")
        result = self.function(**arguments)
        return result if isinstance(result, str) else json.dumps(result)


def as_tools(items: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    """Tools by name from Tool objects or plain functions; a duplicate name is a ToolError."""
    tools: dict[str, Tool] = {}
    for item in items:
        tool = item if isinstance(item, Tool) else Tool.from_function(item)
        if tool.name in tools:
            raise ToolError(f"tool {tool.name!r} is declared twice")
        tools[tool.name] = tool
    return tools
