"""One conversation with the loaded model: a plain chat turn or the runtime's tool loop, streamed and stoppable.

The same calls as the native commands, so greedy answers match them token for token: a plain turn
renders the model's chat template and generates as `bonsai run --chat` / `bonsai chat` do (stops at
the end-of-turn tokens); a turn with tools runs `bonsai.toolcall.ToolLoop` over `engine_generate`
(constrained decoding on, the split-proof parser) as `bonsai tools chat` / `bonsai chat --tools` do
(the panel's default is one call per reply: their `--no-parallel-calls`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bonsai.engine import Sampling
from bonsai.tokenizer.chat_template import ChatTemplate
from bonsai.toolcall.engine_generate import engine_generate, stop_ids_for
from bonsai.toolcall.events import ToolCallEvent, ToolErrorEvent
from bonsai.toolcall.loop import LoopStep, ToolLoop
from bonsai.toolcall.prompt import ToolPrompt

from .prompt_feed import feed_ahead
from .tools import registry_for

Emit = Callable[[str, dict], None]  # (kind, data): "token" {text}, "step" {...}
Progress = Callable[[str, float, str], None]  # (phase, fraction done 0..1, detail): the prompt being read


class Stopped(Exception):
    """The user pressed stop; the turn ends with what was generated so far."""


@dataclass(frozen=True)
class Settings:
    """What the panel's settings decide for a turn (the KV mode is the engine's, chosen at load)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    tools: tuple[str, ...] = ()
    tool_choice: str = "auto"  # "required": the first reply must be a tool call
    parallel_calls: bool = False  # several calls in one reply (a 135M model does better with one)

    @classmethod
    def from_dict(cls, data: Any) -> Settings:
        d = dict(data or {})
        return cls(int(d.get("max_new_tokens", cls.max_new_tokens)), float(d.get("temperature", cls.temperature)),
                   tuple(d.get("tools", ())), str(d.get("tool_choice", cls.tool_choice)),
                   bool(d.get("parallel_calls", cls.parallel_calls)))


class Clock:
    """Decode speed over a turn: tokens after the first of each generation, over the time they took."""

    def __init__(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self._first: float | None = None
        self._count = 0

    def tick(self) -> None:
        now = time.perf_counter()
        if self._first is None:
            self._first = now
        else:
            self.tokens += 1
            self.seconds += now - self._last
        self._last = now
        self._count += 1

    def end_generation(self) -> None:
        self._first = None

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


class Session:
    """The engine, its chat template and the conversation so far."""

    def __init__(self, engine: Any, *, emit: Emit, should_stop: Callable[[], bool],
                 read_tab: Callable[[], dict], progress: Progress | None = None) -> None:
        self.engine = engine
        self.template = ChatTemplate.from_gguf(engine.reader, engine.tokenizer)
        self.emit, self.should_stop, self.read_tab = emit, should_stop, read_tab
        self.progress: Progress = progress or (lambda phase, fraction, detail: None)
        self.stops = stop_ids_for(engine.tokenizer, engine.cfg.eos_id)
        self.messages: list[dict[str, Any]] = []

    def new_chat(self) -> None:
        """Forget the conversation (the KV cache keeps what the next prompt shares with the last)."""
        self.messages = []

    def prompt_ids(self, messages: list[dict[str, Any]], settings: Settings) -> list[int]:
        """The token ids the model sees for `messages` (with the tools' block when tools are on)."""
        if settings.tools:
            text = ToolPrompt.from_chat_template(self.template).render(
                messages, registry_for(settings.tools, self.read_tab).specs())
        else:
            text = self.template.render(messages)
        return self.engine.tokenizer.encode(text, allow_special=True)

    def warm_up(self, settings: Settings) -> int:
        """Prefill what every conversation under `settings` starts with (the system turn): compiles the
        batched and the one-token kernels, and the first message reuses this KV. Returns its length."""
        a = self.prompt_ids([{"role": "user", "content": "a"}], settings)
        b = self.prompt_ids([{"role": "user", "content": "b"}], settings)
        n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        if 2 <= n <= self.engine.max_positions // 2:  # leave room for the conversation itself
            self.engine.reset()
            head = a[: n - 1]
            feed_ahead(self.engine, head, self._reporter("Preparing the system prompt"), lambda: None)
            self.engine.prefill(self.engine.continue_with(head))
            self.engine.prefill(a[n - 1 : n])
        return n

    def _reporter(self, what: str) -> Callable[[int, int], None]:
        def report(done: int, total: int) -> None:
            self.progress("prompt", done / total if total else 1.0, f"{what}: {done} of {total} tokens")

        return report

    def _check_stop(self) -> None:
        if self.should_stop():
            raise Stopped

    def _read_prompt(self, ids: list[int]) -> None:
        """Feed all but the prompt's last batch, reporting progress and stopping between batches."""
        feed_ahead(self.engine, ids, self._reporter("Reading the prompt"), self._check_stop)

    def send(self, text: str, settings: Settings) -> dict:
        """Answer `text`: the turn's tokens, text, tool steps and decode speed (streamed through `emit`)."""
        user = {"role": "user", "content": text}
        if settings.tools:
            return self._tool_turn(user, settings)
        return self._plain_turn(user, settings)

    def _plain_turn(self, user: dict, settings: Settings) -> dict:
        messages = [*self.messages, user]
        ids = self.prompt_ids(messages, settings)
        engine, clock, tokens = self.engine, Clock(), []

        def on_token(tok: int, piece: str) -> None:
            clock.tick()
            tokens.append(tok)
            if piece:
                self.emit("token", {"text": piece})
            if self.should_stop():
                raise Stopped

        sampling = Sampling(temperature=settings.temperature)
        try:
            self._read_prompt(ids)
            gen = engine.generate(engine.continue_with(ids), max_tokens=settings.max_new_tokens, sampling=sampling,
                                  stop_ids=self.stops, decode=engine.tokenizer.decode, on_token=on_token)
            text, reason = gen.text, gen.stop_reason
        except Stopped:
            text, reason = engine.tokenizer.decode(tokens), "stopped"
        self.messages = [*messages, {"role": "assistant", "content": text}]
        return {"mode": "chat", "prompt_ids": ids, "tokens": tokens, "text": text, "stop_reason": reason,
                "tokens_per_s": round(clock.tokens_per_s, 4)}

    def _tool_turn(self, user: dict, settings: Settings) -> dict:
        clock, step_tokens, streamed = Clock(), [], []
        generate = engine_generate(self.engine, settings.max_new_tokens, Sampling(temperature=settings.temperature))

        def recorded(prompt_ids: list[int], processor: Any, on_token: Callable[[int], None]) -> list[int]:
            self._read_prompt(prompt_ids)

            def tick(tok: int) -> None:
                clock.tick()
                on_token(tok)
                if self.should_stop():
                    raise Stopped

            out = generate(prompt_ids, processor, tick)
            clock.end_generation()
            step_tokens.append(out)
            return out

        def on_text(piece: str) -> None:
            streamed.append(piece)
            self.emit("token", {"text": piece})

        done_steps: list[dict] = []

        def on_step(step: LoopStep) -> None:
            done_steps.append(describe_step(step))
            self.emit("step", done_steps[-1])

        loop = ToolLoop(recorded, self.engine.tokenizer, registry_for(settings.tools, self.read_tab),
                        ToolPrompt.from_chat_template(self.template), tool_choice=settings.tool_choice,  # type: ignore[arg-type]
                        parallel_calls=settings.parallel_calls, on_text=on_text, on_step=on_step)
        conversation = [*self.messages, user]
        try:
            result = loop.run(conversation)
        except Stopped:
            self.messages = [*conversation, {"role": "assistant", "content": "".join(streamed)}]
            return {"mode": "tools", "steps": done_steps, "step_tokens": step_tokens, "answer": "".join(streamed),
                    "finished": False, "stop_reason": "stopped", "tokens_per_s": round(clock.tokens_per_s, 4)}
        self.messages = result.messages
        reason = "step_limit"
        if result.finished:  # the answer is the last generation: cut off where it ran out of tokens or room
            last = step_tokens[-1] if step_tokens else []
            cut = len(last) >= settings.max_new_tokens or self.engine.pos >= self.engine.max_positions
            reason = "length" if cut else "answer"
        return {"mode": "tools", "steps": [describe_step(s) for s in result.steps], "step_tokens": step_tokens,
                "answer": result.answer, "finished": result.finished, "stop_reason": reason,
                "tokens_per_s": round(clock.tokens_per_s, 4)}


def describe_step(step: LoopStep) -> dict:
    """A tool-loop step as the chat shows it: what the model wrote, its calls (or malformed calls), the results."""
    calls = []
    for event in step.events:
        if isinstance(event, ToolCallEvent):
            calls.append({"id": event.id, "name": event.name, "arguments": event.arguments})
        elif isinstance(event, ToolErrorEvent):
            calls.append({"id": event.id, "error": event.message, "raw": event.raw})
    return {"index": step.index, "output": step.output, "text": step.text, "calls": calls,
            "results": [{"id": r.id, "name": r.name, "content": r.content, "ok": r.ok} for r in step.results]}
