"""A conversation with tools on the runtime's ToolLoop, showing only the reply's text as it streams.

bonsai.toolcall.ToolLoop generates, parses `<tool_call>` blocks (constrained so they stay valid),
runs the tools and feeds results back. This module keeps the history between questions (so the
engine reuses the KV of the shared prefix), keeps it inside the model's context (the oldest turns
go first, system messages stay; a question that cannot fit is refused before any work), and
filters what a terminal user sees: the text outside call blocks, streamed, one line per tool use,
and a note when a reply was cut short.
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


def _turns(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The non-system messages grouped by user turn (a user message and what answered it)."""
    turns: list[list[dict[str, Any]]] = []
    for message in messages:
        if message.get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


class Session:
    """Keeps the message history; `ask` runs one user turn, tool steps included.

    `reply_room`: positions kept free for the reply (the reply's `--max-tokens`). `tool_choice` "required":
    each question's first step must be a tool call (constrained decoding forces its opening).
    """

    def __init__(self, model: LoadedModel, registry: ToolRegistry, *, max_steps: int = 4,
                 constrained: bool = True, reply_room: int = 128, tool_choice: str = "auto") -> None:
        self.model, self.registry, self.reply_room = model, registry, reply_room
        self.messages: list[dict[str, Any]] = []
        # nothing to constrain without tools (ToolLoop refuses an empty constraint)
        self.loop = ToolLoop(model.generate, model.tokenizer, registry, model.prompt, max_steps,
                             constrained=constrained and len(registry) > 0, on_text=self._piece, on_step=self._step,
                             tool_choice="required" if tool_choice == "required" and len(registry) > 0 else "auto")
        self._on_text: Callable[[str], None] = _ignore
        self._on_tool: Callable[[ToolUse], None] = _ignore
        self._display = ToolCallParser(registry)
        self.dropped_turns = 0  # turns left out of the history to fit the context, over the session

    def clear(self) -> None:
        """Forget the conversation."""
        self.messages = []

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Positions the prompt of `messages` takes (the model's template, the tools' system turn)."""
        return len(self.model.tokenizer.encode(self.model.prompt.render(messages, self.registry.specs())))

    def fit(self, question: str) -> list[dict[str, Any]]:
        """The history plus `question`, the oldest turns dropped until prompt + reply room fits the context."""
        user = {"role": "user", "content": question}
        limit = self.model.max_positions
        if limit is None:
            return [*self.messages, user]
        system = [m for m in self.messages if m.get("role") == "system"]
        alone = self.prompt_tokens([*system, user])
        if alone + self.reply_room > limit:
            raise BonsaiError(f"this question takes {alone} positions with the system prompt, and the reply "
                              f"{self.reply_room} more (--max-tokens), but the context holds {limit} "
                              f"(--max-positions): shorten it")
        turns = _turns([m for m in self.messages if m.get("role") != "system"])
        if turns and self.prompt_tokens([*system, *sum(turns, []), user]) + self.reply_room > limit:
            # once turns must go, drop down to three quarters of the context: the prompt's prefix then stays
            # the same (and its KV cached) for the next few turns instead of changing on every one
            target = max(limit - limit // 4, alone + self.reply_room)
            while turns and self.prompt_tokens([*system, *sum(turns, []), user]) + self.reply_room > target:
                turns.pop(0)
                self.dropped_turns += 1
        return [*system, *sum(turns, []), user]

    def ask(self, text: str, on_text: Callable[[str], None] = _ignore,
            on_tool: Callable[[ToolUse], None] = _ignore) -> str:
        """The final answer; reply text streams to `on_text` (call blocks hidden), tool uses to `on_tool`.

        Raises BonsaiError when the question cannot fit; on any error (a stop included) the history is
        left as it was before the question.
        """
        messages = self.fit(text)
        self._on_text, self._on_tool = on_text, on_tool
        self._display = ToolCallParser(self.registry)
        result = self.loop.run(messages)
        self.messages = result.messages
        if not result.finished:
            raise BonsaiError(f"no final answer after {self.loop.max_steps} tool steps (raise --max-steps)")
        return result.answer

    @property
    def finish(self) -> str | None:
        """Why the last generation ended: "stop", "length" (--max-tokens), "context"; None if unknown."""
        return getattr(self.model.generate, "finish", None)

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
