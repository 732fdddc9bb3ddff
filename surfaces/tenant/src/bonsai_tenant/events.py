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
class Logprob:
    """A generated token's log-probability (`logprobs: true`) and the likeliest alternatives."""

    token: str
    logprob: float
    bytes: tuple[int, ...]
    top: tuple[tuple[str, float, tuple[int, ...]], ...] = ()

    def to_openai(self) -> dict[str, Any]:
        """One entry of `choices[].logprobs.content`."""
        return {"token": self.token, "logprob": self.logprob, "bytes": list(self.bytes),
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(b)} for t, lp, b in self.top]}


@dataclass(frozen=True)
class Finish:
    """The turn ended: reason is "stop", "length" or "tool_calls"; token counts for `usage`."""

    reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


Event = TextDelta | ToolCall | Logprob | Finish

# The request options a backend may honour beyond messages, tools, max_tokens and temperature,
# by their OpenAI names; the server answers 400 for one the backend's `features` does not list.
FEATURES = frozenset({"tool_choice", "parallel_tool_calls", "response_format", "stop", "top_p", "seed", "logprobs"})


class Backend(Protocol):
    """Runs one assistant turn. Messages and tools are in the OpenAI chat format.

    Yields TextDelta, ToolCall (and Logprob) events as they are decoded and exactly one Finish, last.
    Request problems found before generating (a schema it cannot follow, a prompt too long) raise
    InvalidRequest from `stream` itself. Options it honours are listed in an optional `features`
    attribute (a subset of FEATURES) and passed as extra keywords: tool_choice ("auto" | "required"),
    parallel_tool_calls (bool), response_format (None | {"type": "json_object"} | {"type":
    "json_schema", "schema": {...}}), stop (tuple of str), top_p (float), seed (int | None),
    logprobs (None | number of alternatives). The returned iterator may have `cancel()`: the server
    calls it when the client leaves or the request runs out of time.
    """

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]],
        max_tokens: int,
        temperature: float,
    ) -> Iterator[Event]: ...
