"""`Assistant(model=..., tools=...)`: chat and streaming over a backend, running local tools in a loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._vendor.bonsai.toolcall import Tool, ToolRegistry
from .errors import ToolError
from .events import Backend, Finish, TextDelta, ToolCall

Messages = str | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Chunk:
    """One streamed piece: reply text, a tool call the model made, that call's result, or the end."""

    text: str = ""
    tool_call: ToolCall | None = None
    tool_result: str | None = None
    finish_reason: str | None = None


@dataclass(frozen=True)
class Reply:
    """A whole reply: its text, the tool calls made on the way, and the full message history."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    messages: list[dict[str, Any]] = field(repr=False)


def _as_messages(messages: Messages) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _open_backend(model: str | Path | Backend | None) -> Backend:
    if model is None or isinstance(model, str | Path):
        from .runtime_backend import RuntimeBackend

        return RuntimeBackend.open(model)
    return model


class Assistant:
    """A chat assistant: `model` is a GGUF path, None for the default model, or any Backend.

    Tools are typed, documented functions (or `bonsai.toolcall.Tool`s); when the model calls one,
    the assistant runs it, feeds the result back and lets the model continue, at most `max_tool_rounds` times.
    """

    def __init__(
        self,
        model: str | Path | Backend | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        max_tool_rounds: int = 4,
    ) -> None:
        self.backend = _open_backend(model)
        self.tools = ToolRegistry(tools)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.max_tool_rounds = max_tool_rounds

    def stream(self, messages: Messages) -> Iterator[Chunk]:
        """Yield the reply as it is generated; the last chunk carries the finish reason."""
        yield from self._run(_as_messages(messages))

    def chat(self, messages: Messages) -> Reply:
        """The whole reply at once (tools run as in `stream`)."""
        history = _as_messages(messages)
        text: list[str] = []
        calls: list[ToolCall] = []
        reason = "stop"
        for chunk in self._run(history):
            text.append(chunk.text)
            if chunk.tool_call is not None and chunk.tool_result is None:
                calls.append(chunk.tool_call)
            if chunk.finish_reason is not None:
                reason = chunk.finish_reason
        return Reply("".join(text), tuple(calls), reason, history)

    def _run(self, history: list[dict[str, Any]]) -> Iterator[Chunk]:
        specs = self.tools.specs()
        for _round in range(self.max_tool_rounds + 1):
            text: list[str] = []
            calls: list[ToolCall] = []
            finish = Finish("stop")
            for event in self.backend.stream(history, tools=specs, max_tokens=self.max_tokens,
                                             temperature=self.temperature):
                if isinstance(event, TextDelta):
                    text.append(event.text)
                    yield Chunk(text=event.text)
                elif isinstance(event, ToolCall):
                    calls.append(event)
                    yield Chunk(tool_call=event)
                elif isinstance(event, Finish):
                    finish = event
            history.append({"role": "assistant", "content": "".join(text) or None,
                            **({"tool_calls": [c.to_openai() for c in calls]} if calls else {})})
            if not calls:
                yield Chunk(finish_reason=finish.reason)
                return
            for call in calls:
                result = self._call(call)
                history.append({"role": "tool", "tool_call_id": call.id, "content": result})
                yield Chunk(tool_call=call, tool_result=result)
        yield Chunk(finish_reason="tool_calls")

    def _call(self, call: ToolCall) -> str:
        """The tool's result, or an error text the model can read; a bad call never raises."""
        try:
            arguments = call.parsed_arguments()
        except ToolError as exc:
            return f"error: {exc}"
        return self.tools.run(call.id, call.name, arguments).content
