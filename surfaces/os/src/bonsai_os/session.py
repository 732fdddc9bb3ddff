"""A conversation with tools on the runtime's ToolLoop, showing only the reply's text as it streams.

bonsai.toolcall.ToolLoop generates, parses `<tool_call>` blocks (constrained so they stay valid),
runs the tools and feeds results back. This module keeps the history between questions (so the
engine reuses the KV of the shared prefix) and filters what a terminal user sees: the text
outside call blocks, streamed, and one line per tool use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._vendor.bonsai.errors import BonsaiError
from ._vendor.bonsai.toolcall import ToolLoop, ToolRegistry
from ._vendor.bonsai.toolcall.events import TextEvent, ToolCallEvent
from ._vendor.bonsai.toolcall.loop import LoopStep
from ._vendor.bonsai.toolcall.parser import ToolCallParser
from .model import LoadedModel


@dataclass(frozen=True)
class ToolUse:
    """One tool call the model made and what it returned (`ok` False: the text is an error)."""

    name: str
    arguments: dict[str, Any]
    result: str
    ok: bool


def _ignore(_value: Any) -> None:
    return None


class Session:
    """Keeps the message history; `ask` runs one user turn, tool steps included."""

    def __init__(self, model: LoadedModel, registry: ToolRegistry, *, max_steps: int = 4,
                 constrained: bool = True) -> None:
        self.registry = registry
        self.messages: list[dict[str, Any]] = []
        # nothing to constrain without tools (ToolLoop refuses an empty constraint)
        self.loop = ToolLoop(model.generate, model.tokenizer, registry, model.prompt, max_steps,
                             constrained=constrained and len(registry) > 0, on_text=self._piece, on_step=self._step)
        self._on_text: Callable[[str], None] = _ignore
        self._on_tool: Callable[[ToolUse], None] = _ignore
        self._display = ToolCallParser(registry)

    def ask(self, text: str, on_text: Callable[[str], None] = _ignore,
            on_tool: Callable[[ToolUse], None] = _ignore) -> str:
        """The final answer; reply text streams to `on_text` (call blocks hidden), tool uses to `on_tool`."""
        self._on_text, self._on_tool = on_text, on_tool
        self._display = ToolCallParser(self.registry)
        result = self.loop.run([*self.messages, {"role": "user", "content": text}])
        self.messages = result.messages
        if not result.finished:
            raise BonsaiError(f"no final answer after {self.loop.max_steps} tool steps (raise --max-steps)")
        return result.answer

    def _piece(self, piece: str) -> None:
        self._show(self._display.feed(piece))

    def _step(self, step: LoopStep) -> None:
        self._show(self._display.finish())
        self._display = ToolCallParser(self.registry)
        calls = {e.id: e for e in step.events if isinstance(e, ToolCallEvent)}
        for result in step.results:
            call = calls.get(result.id)
            self._on_tool(ToolUse(result.name or "?", call.arguments if call else {}, result.content, result.ok))

    def _show(self, events: list) -> None:
        for event in events:
            if isinstance(event, TextEvent) and event.text:
                self._on_text(event.text)
