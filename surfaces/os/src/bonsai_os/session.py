"""A conversation with tools: the model streams text, `<tool_call>` blocks run tools, results go back.

Like bonsai.tools.ToolLoop, but it streams only the reply's text (never the call blocks) as the
model writes it, which is what a terminal user should see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bonsai.tools import ToolRegistry
from bonsai.tools.events import TextEvent, ToolCallEvent, ToolErrorEvent
from bonsai.tools.parser import ToolCallParser

from .model import ChatModel


@dataclass(frozen=True)
class ToolUse:
    """One tool call the model made and what it returned (`ok` False: the text is an error)."""

    name: str
    arguments: dict[str, Any]
    result: str
    ok: bool


class Session:
    """Keeps the message history; `ask` runs one user turn, tool rounds included."""

    def __init__(self, model: ChatModel, registry: ToolRegistry, *, max_tokens: int = 128,
                 max_tool_rounds: int = 3) -> None:
        self.model, self.registry = model, registry
        self.max_tokens, self.max_tool_rounds = max_tokens, max_tool_rounds
        # OpenAI-style history; the model's template (through ToolPrompt) decides the system turn
        self.messages: list[dict[str, Any]] = []

    def ask(self, text: str, on_text: Callable[[str], None] = lambda _t: None,
            on_tool: Callable[[ToolUse], None] = lambda _u: None) -> str:
        """The assistant's reply text (also streamed to `on_text`); tool uses go to `on_tool`."""
        self.messages.append({"role": "user", "content": text})
        reply: list[str] = []
        for _round in range(self.max_tool_rounds + 1):
            raw: list[str] = []
            uses: list[ToolUse] = []
            parser = ToolCallParser(self.registry)

            def feed(piece: str, raw=raw, uses=uses, parser=parser) -> None:
                raw.append(piece)
                self._handle(parser.feed(piece), reply, uses, on_text, on_tool)

            self.model.complete(self.messages, self.registry.specs(), feed, self.max_tokens)
            self._handle(parser.finish(), reply, uses, on_text, on_tool)
            self.messages.append({"role": "assistant", "content": "".join(raw)})
            if not uses:
                break
            for use in uses:
                self.messages.append({"role": "tool", "content": use.result})
        return "".join(reply)

    def _handle(self, events: list, reply: list[str], uses: list[ToolUse], on_text, on_tool) -> None:
        for event in events:
            if isinstance(event, TextEvent):
                reply.append(event.text)
                on_text(event.text)
            elif isinstance(event, ToolCallEvent):
                result = self.registry.run(event.id, event.name, event.arguments)
                use = ToolUse(event.name, event.arguments, result.content, result.ok)
                uses.append(use)
                on_tool(use)
            elif isinstance(event, ToolErrorEvent):
                use = ToolUse("?", {}, f"error: {event.message}", False)
                uses.append(use)
                on_tool(use)
