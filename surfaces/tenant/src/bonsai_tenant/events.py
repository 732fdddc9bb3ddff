"""What a model backend yields for one assistant turn, and the protocol a backend implements."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import ToolError


@dataclass(frozen=True)
class TextDelta:
    """A piece of the reply's text, in order."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model asks for one tool call; `arguments` is the JSON text of an object."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; a ToolError naming the tool when they are not a JSON object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ToolError(f"tool {self.name!r}: arguments are not valid JSON ({exc})") from exc
        if not isinstance(value, dict):
            raise ToolError(f"tool {self.name!r}: arguments must be a JSON object, got {type(value).__name__}")
        return value

    def to_openai(self) -> dict[str, Any]:
        """This call in the OpenAI `tool_calls` format."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Finish:
    """The turn ended: reason is "stop", "length" or "tool_calls"; token counts for `usage`."""

    reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


Event = TextDelta | ToolCall | Finish


class Backend(Protocol):
    """Runs one assistant turn. Messages and tools are in the OpenAI chat format.

    Yields TextDelta and ToolCall events as they are decoded and exactly one Finish, last.
    """

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]],
        max_tokens: int,
        temperature: float,
    ) -> Iterator[Event]: ...
