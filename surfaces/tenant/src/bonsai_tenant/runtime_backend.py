"""The Backend on the bonsai runtime: the model's chat template (via ToolPrompt), GPU engine, streaming parser."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bonsai.errors import BonsaiError
from bonsai.tools import Tool, ToolRegistry
from bonsai.tools.events import TextEvent, ToolCallEvent, ToolErrorEvent
from bonsai.tools.parser import ToolCallParser
from bonsai.tools.prompt import ToolPrompt

from .default_model import default_model_path
from .errors import InvalidRequest, TenantError
from .events import Event, Finish, TextDelta, ToolCall

_END = object()


class _Cancelled(Exception):
    """The consumer went away (client disconnected): stop generating."""


def registry_for(tools: Sequence[Mapping[str, Any]]) -> ToolRegistry:
    """A registry of the request's tool declarations (no functions: the client runs them)."""
    try:
        return ToolRegistry(Tool(t["function"]["name"], t["function"].get("description", ""),
                                 dict(t["function"].get("parameters") or {"type": "object"})) for t in tools)
    except BonsaiError as exc:
        raise InvalidRequest(f"tools: {exc}") from exc


def _events(parsed: list[Any]) -> Iterator[Event]:
    for event in parsed:
        if isinstance(event, TextEvent):
            if event.text:
                yield TextDelta(event.text)
        elif isinstance(event, ToolCallEvent):
            yield ToolCall(event.id, event.name, json.dumps(event.arguments, ensure_ascii=False))
        elif isinstance(event, ToolErrorEvent):  # not a valid call: keep what the model wrote, as text
            yield TextDelta(f"<tool_call>{event.raw}</tool_call>")


class RuntimeBackend:
    """A GGUF model on the GPU engine; one generation at a time (one device), others wait."""

    def __init__(self, engine: Any, template: Any) -> None:
        self.engine = engine
        self.prompt = ToolPrompt.from_chat_template(template)
        tok = engine.tokenizer
        self.stop_ids = {engine.cfg.eos_id} if engine.cfg.eos_id is not None else set()
        try:
            self.stop_ids.add(tok.token_id("<|im_end|>"))
        except Exception:  # noqa: BLE001, S110 - a vocabulary without ChatML's end marker
            pass
        self.lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path | None) -> RuntimeBackend:
        """The backend for a GGUF file, or the default model when `path` is None."""
        from bonsai.chat_template import ChatTemplate
        from bonsai.engine import Engine

        model = default_model_path() if path is None else Path(path)
        if not model.is_file():
            raise TenantError(f"{model}: no such model file")
        engine = Engine.load(model, progress=False)
        return cls(engine, ChatTemplate.from_gguf(engine.reader, engine.tokenizer))

    def stream(self, messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]],
               max_tokens: int, temperature: float) -> Iterator[Event]:
        """Validates and renders the prompt now (errors raise here); the returned iterator generates."""
        registry = registry_for(tools)
        plain = [{**m, "role": "system"} if m["role"] == "developer" else dict(m) for m in messages]
        try:
            text = self.prompt.render(plain, list(tools) or None)
        except (BonsaiError, ValueError, KeyError, TypeError) as exc:
            raise InvalidRequest(f"messages: cannot render them for the model ({type(exc).__name__}: {exc})") from exc
        ids = self.engine.tokenizer.encode(text, allow_special=True)
        if len(ids) + max_tokens > self.engine.max_positions:
            raise InvalidRequest(f"prompt ({len(ids)} tokens) + max_tokens ({max_tokens}) exceeds the model's "
                                 f"{self.engine.max_positions} positions")
        return self._generate(ids, registry, max_tokens, temperature)

    def _generate(self, ids: list[int], registry: ToolRegistry, max_tokens: int, temperature: float) -> Iterator[Event]:
        from bonsai.engine import Sampling

        out: queue.Queue[Any] = queue.Queue()
        cancel = threading.Event()
        parser = ToolCallParser(registry)
        tok = self.engine.tokenizer

        def on_token(_id: int, piece: str) -> None:
            if cancel.is_set():
                raise _Cancelled
            for event in _events(parser.feed(piece)):
                out.put(event)

        def work() -> None:
            try:
                with self.lock:
                    self.engine.reset()
                    result = self.engine.generate(ids, max_tokens=max_tokens, sampling=Sampling(temperature=temperature),
                                                  stop_ids=self.stop_ids, decode=tok.decode, on_token=on_token)
                for event in _events(parser.finish()):
                    out.put(event)
                out.put(Finish("length" if result.stop_reason == "length" else "stop", len(ids), len(result.tokens)))
            except _Cancelled:
                pass
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                out.put(exc)
            out.put(_END)

        threading.Thread(target=work, name="bonsai-generate", daemon=True).start()
        try:
            while (item := out.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            cancel.set()
