"""The tool loop: generate, parse calls from the stream, run them, append results, repeat.

Protocols (so the loop runs on a scripted fake as well as the GPU engine):
    generate(prompt_ids, processor, on_token) -> list[int]   new token ids (without the stop token);
        `processor` is None or has `apply(logits)` / `accept(token_id)` (ToolCallConstraint);
        `on_token(token_id)` is called for each new token as it is chosen.
    tokenizer: encode(text) -> ids, token_bytes(id) -> bytes, is_special(id), vocab_size.
    prompt: ToolPrompt (renders messages + tools with the model's own template).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .echo import EchoFilter
from .events import Event, TextEvent, ToolCallEvent, ToolErrorEvent, coalesce
from .parser import ToolCallParser
from .prompt import ToolPrompt
from .registry import ToolRegistry, ToolResult


class GenerateFn(Protocol):
    def __call__(
        self, prompt_ids: list[int], processor: Any, on_token: Callable[[int], None]
    ) -> list[int]: ...


@dataclass
class LoopStep:
    """One generation: the prompt it saw, what the model wrote, the events, the calls' results."""

    index: int
    prompt: str
    output: str = ""
    events: list[Event] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextEvent)).strip()


@dataclass
class LoopResult:
    """The final answer (text of the last step), the whole conversation, and every step."""

    answer: str
    messages: list[dict[str, Any]]
    steps: list[LoopStep]
    finished: bool  # False when the step limit ran out while the model was still calling tools


class ToolLoop:
    """Runs a conversation with tools until the model answers without calling one, or `max_steps`."""

    def __init__(
        self,
        generate: GenerateFn,
        tokenizer: Any,
        registry: ToolRegistry,
        prompt: ToolPrompt,
        max_steps: int = 4,
        *,
        constrained: bool = True,
        tool_choice: Literal["auto", "required"] = "auto",
        parallel_calls: bool = True,
        on_text: Callable[[str], None] | None = None,
        on_step: Callable[[LoopStep], None] | None = None,
    ) -> None:
        """`tool_choice="required"`: the first step must begin with a call; `parallel_calls=False`:
        at most one call per step (both need `constrained`)."""
        self.generate, self.tokenizer, self.registry, self.prompt = generate, tokenizer, registry, prompt
        self.max_steps, self.tool_choice, self.parallel_calls = max_steps, tool_choice, parallel_calls
        self.on_text, self.on_step = on_text, on_step
        self.constrained = constrained
        self.vocab: list[bytes | None] | None = None
        self.trie: Any = None  # built on first use (a pass over the whole vocabulary)

    def _processor(self, first: bool) -> Any:
        if not self.constrained:
            return None
        from .constrain import ToolCallConstraint, vocabulary
        from .trie import TokenTrie

        if self.trie is None:
            self.vocab = vocabulary(self.tokenizer)
            self.trie = TokenTrie(self.vocab)
        force = first and self.tool_choice == "required"
        return ToolCallConstraint(
            self.registry,
            self.vocab or [],
            trie=self.trie,
            force_call=force,
            max_calls=None if self.parallel_calls else 1,
        )

    def _generate_step(self, step: LoopStep, processor: Any) -> None:
        parser = ToolCallParser(self.registry)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        echo = EchoFilter()  # an echoed <tool_response> block is not the model's answer
        pieces: list[str] = []
        events: list[Event] = []

        def show(piece: str) -> None:
            events.extend(parser.feed(piece))
            if self.on_text and piece:
                self.on_text(piece)

        def on_token(token_id: int) -> None:
            special = self.tokenizer.is_special(token_id)
            piece = "" if special else decoder.decode(self.tokenizer.token_bytes(token_id))
            pieces.append(piece)
            show(echo.feed(piece))

        self.generate(self.tokenizer.encode(step.prompt), processor, on_token)
        tail = decoder.decode(b"", final=True)
        pieces.append(tail)
        show(echo.feed(tail) + echo.finish())
        step.output = "".join(pieces)
        step.events = coalesce(events + parser.finish())

    def run(self, conversation: str | Sequence[dict[str, Any]]) -> LoopResult:
        """Answer `conversation` (a user message, or a list of messages), calling tools as needed."""
        messages = (
            [{"role": "user", "content": conversation}]
            if isinstance(conversation, str)
            else list(conversation)
        )
        messages = [dict(m) for m in messages]
        specs = self.registry.specs()
        steps: list[LoopStep] = []
        for index in range(self.max_steps):
            step = LoopStep(index, self.prompt.render(messages, specs))
            self._generate_step(step, self._processor(first=index == 0))
            steps.append(step)
            calls = [e for e in step.events if isinstance(e, ToolCallEvent | ToolErrorEvent)]
            assistant: dict[str, Any] = {"role": "assistant", "content": step.text}
            if calls:
                assistant["tool_calls"] = [_openai_call(c) for c in calls]
            messages.append(assistant)
            for call in calls:
                result = (
                    self.registry.run(call.id, call.name, call.arguments)
                    if isinstance(call, ToolCallEvent)
                    else ToolResult(call.id, "", f"error: {call.message}", False)
                )
                step.results.append(result)
                messages.append({"role": "tool", "tool_call_id": result.id, "name": result.name,
                                 "content": result.content})  # fmt: skip
            if self.on_step:
                self.on_step(step)
            if not calls:
                return LoopResult(step.text, messages, steps, finished=True)
        return LoopResult("", messages, steps, finished=False)


def _openai_call(event: ToolCallEvent | ToolErrorEvent) -> dict[str, Any]:
    """The assistant message's record of a call; a malformed one is kept as an empty-arguments call
    to `invalid` so the transcript shows it, and its error goes back as that call's result."""
    if isinstance(event, ToolCallEvent):
        fn = {"name": event.name, "arguments": event.arguments}
    else:
        fn = {"name": "invalid", "arguments": {"raw": event.raw}}
    return {"id": event.id, "type": "function", "function": fn}
