"""A conversation with tools: the model streams text, `<tool_call>` blocks run tools, results go back."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bonsai.tools import ToolRegistry
from bonsai.tools.events import TextEvent, ToolCallEvent, ToolErrorEvent
from bonsai.tools.parser import ToolCallParser

from .model import ChatModel

SYSTEM = (
    "You are the assistant of this computer. Answer briefly."
)
TOOLS_HELP = (
    "You may call these tools:\n<tools>\n{specs}\n</tools>\n"
    'To call one, reply with <tool_call>{{"name": "<tool name>", "arguments": {{...}}}}</tool_call>; '
    "its result comes back in a tool message."
)


@dataclass(frozen=True)
class ToolUse:
    """One tool call the model made and what it returned (`ok` False: the text is an error)."""

    name: str
    arguments: dict[str, Any]
    result: str
    ok: bool


def system_prompt(registry: ToolRegistry) -> str:
    """The system turn: who the assistant is and, when there are tools, how to call them."""
    if not len(registry):
        return SYSTEM
    specs = "\n".join(json.dumps(spec, ensure_ascii=False) for spec in registry.specs())
    return SYSTEM + "\n" + TOOLS_HELP.format(specs=specs)


class Session:
    """Keeps the message history; `ask` runs one user turn, tool rounds included."""

    def __init__(self, model: ChatModel, registry: ToolRegistry, *, max_tokens: int = 128,
                 max_tool_rounds: int = 3) -> None:
        self.model, self.registry = model, registry
        self.max_tokens, self.max_tool_rounds = max_tokens, max_tool_rounds
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(registry)}]

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

            self.model.complete(self.messages, feed, self.max_tokens)
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
