"""The Backend on the bonsai runtime: ToolPrompt, the engine's generate with constrained tool calls, the parser.

A request's tools become a registry; inside `<tool_call>` the runtime's ToolCallConstraint masks
every token that would make the call invalid JSON or break its schema, and the streaming parser
turns the text into TextDelta / ToolCall events. The KV cache is reset for every request, so one
tenant's prompt never shares cached positions (or their timing) with another's.
"""

from __future__ import annotations

import codecs
import json
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bonsai.errors import BonsaiError
from bonsai.models import default_model_path
from bonsai.toolcall import Tool, ToolRegistry
from bonsai.toolcall.events import TextEvent, ToolCallEvent, ToolErrorEvent
from bonsai.toolcall.parser import ToolCallParser

from .errors import InvalidRequest, TenantError
from .events import Event, Finish, TextDelta, ToolCall

_END = object()
# generate(prompt_ids, processor, on_token) -> new ids, as bonsai.toolcall.engine_generate makes it
GenerateFn = Callable[[list[int], Any, Callable[[int], None]], list[int]]


@dataclass(frozen=True)
class ModelParts:
    """What the backend needs from a loaded model; tests pass scripted stand-ins."""

    # (max_tokens, temperature) -> a GenerateFn for one request
    make_generate: Callable[[int, float], GenerateFn]
    # encode(text, allow_special=...), token_bytes(id), is_special(id), vocab_size
    tokenizer: Any
    # bonsai.toolcall.prompt.ToolPrompt: render(messages, tools) -> prompt text
    prompt: Any
    # the most positions a prompt plus its reply may take
    max_positions: int
    # forget the KV cache (called before every request)
    reset: Callable[[], None]


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
    """A model on the GPU engine; one generation at a time (one device), others wait."""

    def __init__(self, parts: ModelParts, *, constrained: bool = True) -> None:
        self.parts, self.constrained = parts, constrained
        self.lock = threading.Lock()
        self._trie: Any = None
        self._vocab: list[bytes | None] | None = None

    @classmethod
    def open(cls, path: str | Path | None) -> RuntimeBackend:
        """The backend for a GGUF file, or the default model when `path` is None."""
        from bonsai.tokenizer.chat_template import ChatTemplate
        from bonsai.engine import Sampling
        from bonsai.engine.native import load_engine
        from bonsai.toolcall.engine_generate import engine_generate
        from bonsai.toolcall.prompt import ToolPrompt

        model = default_model_path() if path is None else Path(path)
        if not model.is_file():
            raise TenantError(f"{model}: no such model file")
        engine = load_engine(model, progress=False)
        prompt = ToolPrompt.from_chat_template(ChatTemplate.from_gguf(engine.reader, engine.tokenizer))
        return cls(ModelParts(
            make_generate=lambda n, t: engine_generate(engine, max_tokens=n, sampling=Sampling(temperature=t)),
            tokenizer=engine.tokenizer, prompt=prompt, max_positions=engine.max_positions, reset=engine.reset))

    def stream(self, messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]],
               max_tokens: int, temperature: float) -> Iterator[Event]:
        """Validates and renders the prompt now (errors raise here); the returned iterator generates."""
        registry = registry_for(tools)
        plain = [{**m, "role": "system"} if m["role"] == "developer" else dict(m) for m in messages]
        try:
            text = self.parts.prompt.render(plain, list(tools) or None)
        except (BonsaiError, ValueError, KeyError, TypeError) as exc:
            raise InvalidRequest(f"messages: cannot render them for the model ({type(exc).__name__}: {exc})") from exc
        ids = self.parts.tokenizer.encode(text, allow_special=True)
        if len(ids) + max_tokens > self.parts.max_positions:
            raise InvalidRequest(f"prompt ({len(ids)} tokens) + max_tokens ({max_tokens}) exceeds the model's "
                                 f"{self.parts.max_positions} positions")
        return self._generate(ids, registry, self.parts.make_generate(max_tokens, temperature), max_tokens)

    def _processor(self, registry: ToolRegistry) -> Any:
        """The constraint for this request's tools (vocabulary trie built once), or None."""
        if not (self.constrained and len(registry)):
            return None
        from bonsai.toolcall.constrain import ToolCallConstraint, vocabulary
        from bonsai.toolcall.trie import TokenTrie

        if self._trie is None:
            self._vocab = vocabulary(self.parts.tokenizer)
            self._trie = TokenTrie(self._vocab)
        return ToolCallConstraint(registry, self._vocab or [], trie=self._trie)

    def _generate(self, ids: list[int], registry: ToolRegistry, generate: GenerateFn,
                  max_tokens: int) -> Iterator[Event]:
        out: queue.Queue[Any] = queue.Queue()
        cancel = threading.Event()
        parser = ToolCallParser(registry)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        tok = self.parts.tokenizer

        def emit(piece: str) -> None:
            for event in _events(parser.feed(piece)):
                out.put(event)

        def on_token(token_id: int) -> None:
            if cancel.is_set():
                raise _Cancelled
            emit("" if tok.is_special(token_id) else decoder.decode(tok.token_bytes(token_id)))

        def work() -> None:
            try:
                with self.lock:
                    self.parts.reset()
                    new = generate(ids, self._processor(registry), on_token)
                emit(decoder.decode(b"", final=True))
                for event in _events(parser.finish()):
                    out.put(event)
                out.put(Finish("length" if len(new) >= max_tokens else "stop", len(ids), len(new)))
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
