"""The Backend on the bonsai runtime: a request's prompt, constraints and options, then its events.

`stream` does everything that can refuse the request before any work: the tools' schemas, the
reply format, the prompt encoded with content kept plain (prompt_ids) and bounded by the model's
positions. The returned Turn generates on the engine (decode.py) under the request's constraint:
tool calls that always parse and validate ("required"/a named function force one; "auto" lets the
model choose), or a JSON reply. The text goes through the runtime's echo filter and tool-call parser;
stop sequences and split UTF-8 are handled in text_out. The KV cache is reset for every request,
so one tenant's prompt never shares cached positions (or their timing) with another's.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._vendor.bonsai.errors import BonsaiError
from ._vendor.bonsai.toolcall import Tool, ToolRegistry
from ._vendor.bonsai.toolcall.echo import EchoFilter
from ._vendor.bonsai.toolcall.events import CLOSE_TAG, OPEN_TAG, TextEvent, ToolCallEvent, ToolErrorEvent
from ._vendor.bonsai.toolcall.parser import ToolCallParser
from .decode import Cancelled, DecodeSettings, GenerateFn
from .decode import Logprob as TokenLogprob
from .errors import InvalidRequest, TenantError
from .events import FEATURES, Event, Finish, Logprob, TextDelta, ToolCall
from .json_mode import JsonConstraint, reply_node
from .prompt_ids import Vocabulary, encode_prompt
from .text_out import TextOut
from .turn import Turn


@dataclass(frozen=True)
class ModelParts:
    """What the backend needs from a loaded model; tests pass scripted stand-ins."""

    # generate(prompt_ids, DecodeSettings, processor, on_token(id, logprob), cancelled) -> new ids (decode.py)
    generate: GenerateFn
    # tokens, special_ids, encode(text, allow_special=...), token_bytes(id), token_id(text), is_special(id), vocab_size
    tokenizer: Any
    # bonsai.toolcall.prompt.ToolPrompt: render(messages, tools) -> prompt text
    prompt: Any
    # the most positions a prompt plus its reply may take
    max_positions: int
    # forget the KV cache (called before every request)
    reset: Callable[[], None]


class _StopSequence(Exception):
    """A stop sequence appeared in the reply: generation ends there."""


def registry_for(tools: Sequence[Mapping[str, Any]]) -> ToolRegistry:
    """A registry of the request's tool declarations (no functions: the client runs them)."""
    try:
        return ToolRegistry(Tool(t["function"]["name"], t["function"].get("description", ""),
                                 dict(t["function"].get("parameters") or {"type": "object"})) for t in tools)
    except BonsaiError as exc:
        raise InvalidRequest(f"tools: {exc}") from exc
    except (AttributeError, TypeError, KeyError, ValueError) as exc:  # e.g. "properties" that is not an object
        raise InvalidRequest(f"tools: a parameters schema this server cannot follow ({type(exc).__name__})") from exc


def _events(parsed: list[Any]) -> list[Event]:
    """The parser's events as the server's. Each call gets an id of its own (the parser numbers calls
    per reply; OpenAI clients key results by id across a conversation)."""
    out: list[Event] = []
    for event in parsed:
        if isinstance(event, TextEvent):
            if event.text:
                out.append(TextDelta(event.text))
        elif isinstance(event, ToolCallEvent):
            out.append(ToolCall(f"call_{secrets.token_hex(12)}", event.name,
                                json.dumps(event.arguments, ensure_ascii=False)))
        elif isinstance(event, ToolErrorEvent):  # a whole block that is not a valid call: kept as text
            out.append(TextDelta(f"{OPEN_TAG}{event.raw}{CLOSE_TAG}"))
    return out


def _unfinished(parsed: list[Any]) -> list[Any]:
    """The parser's last events without what a reply cut short left unfinished: a call never closed,
    or the start of one (`<tool_`) held back as text. Half a call is not a call, nor text to show."""
    kept = [e for e in parsed if not isinstance(e, ToolErrorEvent)]  # at the end, only an unclosed block
    if kept and isinstance(kept[-1], TextEvent):
        tail = kept[-1].text
        for cut in range(min(len(tail), len(OPEN_TAG) - 1), 0, -1):
            if OPEN_TAG.startswith(tail[-cut:]):
                kept[-1] = TextEvent(tail[:-cut])
                break
    return kept


class RuntimeBackend:
    """A model on the GPU engine; one generation at a time (one device), others wait."""

    features = FEATURES

    def __init__(self, parts: ModelParts, *, constrained: bool = True) -> None:
        self.parts, self.constrained = parts, constrained
        self.lock = threading.Lock()
        self.vocabulary = Vocabulary.of(parts.tokenizer)
        self._trie: Any = None
        self._vocab: list[bytes | None] | None = None

    @classmethod
    def open(cls, path: str | Path | None, *, max_positions: int | None = None) -> RuntimeBackend:
        """The backend for a GGUF file (None: the default model), with at most `max_positions`
        positions per request (None: the model's own context length)."""
        from ._vendor.bonsai.config import ModelConfig
        from ._vendor.bonsai.engine.native import load_engine
        from ._vendor.bonsai.gguf import GGUFReader
        from ._vendor.bonsai.models import resolve_model
        from ._vendor.bonsai.tokenizer.chat_template import ChatTemplate
        from ._vendor.bonsai.toolcall.prompt import ToolPrompt
        from .decode import engine_generate

        model = resolve_model(path)
        context = ModelConfig.from_gguf(GGUFReader(model)).context_length
        if max_positions is not None and max_positions > context:
            raise TenantError(f"{model}: max-positions {max_positions} is more than the model's context of {context}")
        engine = load_engine(model, progress=False, max_positions=max_positions or context)
        prompt = ToolPrompt.from_chat_template(ChatTemplate.from_gguf(engine.reader, engine.tokenizer))
        return cls(ModelParts(generate=engine_generate(engine), tokenizer=engine.tokenizer, prompt=prompt,
                              max_positions=engine.max_positions, reset=engine.reset))

    def stream(self, messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]],
               max_tokens: int, temperature: float, tool_choice: str = "auto", parallel_tool_calls: bool = True,
               response_format: dict[str, Any] | None = None, stop: tuple[str, ...] = (), top_p: float = 1.0,
               seed: int | None = None, logprobs: int | None = None) -> Turn:
        """Validates, renders and encodes the prompt now (errors raise here); the returned Turn generates."""
        registry = registry_for(tools)
        node = reply_node(response_format) if response_format else None
        if node is not None and len(registry) and tool_choice == "auto":
            raise InvalidRequest("response_format: with tools, set tool_choice to 'none' or 'required' "
                                 "(a reply that may be either a call or JSON is not supported)")
        room = self.parts.max_positions - max_tokens
        if room < 1:
            raise InvalidRequest(f"max_tokens: {max_tokens} leaves no room for the prompt in the model's "
                                 f"{self.parts.max_positions} positions")
        plain = [{**m, "role": "system"} if m["role"] == "developer" else dict(m) for m in messages]
        try:
            ids = encode_prompt(self.parts.prompt.render, self.parts.tokenizer, self.vocabulary, plain,
                                list(tools) or None, room)
        except InvalidRequest:
            raise
        except (BonsaiError, ValueError, KeyError, TypeError) as exc:
            raise InvalidRequest(f"messages: cannot render them for the model ({type(exc).__name__})") from exc
        settings = DecodeSettings(max_tokens, temperature, top_p, seed, logprobs)

        def processor() -> Any:
            if node is not None and not (len(registry) and tool_choice == "required"):
                return JsonConstraint(node, *self._trie_parts())
            if not (self.constrained and len(registry)):
                return None
            from ._vendor.bonsai.toolcall.constrain import ToolCallConstraint

            vocab, trie = self._trie_parts()
            return ToolCallConstraint(registry, vocab, trie=trie, force_call=tool_choice == "required",
                                      max_calls=None if parallel_tool_calls else 1)

        turn = Turn(lambda emit, cancelled: self._work(ids, registry, settings, processor, stop, emit, cancelled, turn))
        turn.prompt_size = len(ids)
        return turn

    def _trie_parts(self) -> tuple[list[bytes | None], Any]:
        """The vocabulary's bytes and its TokenTrie (built once per model)."""
        from ._vendor.bonsai.toolcall.constrain import vocabulary
        from ._vendor.bonsai.toolcall.trie import TokenTrie

        if self._trie is None:
            self._vocab = vocabulary(self.parts.tokenizer)
            self._trie = TokenTrie(self._vocab)
        return self._vocab or [], self._trie

    def _logprob(self, lp: TokenLogprob) -> Logprob:
        def spelled(token_id: int) -> tuple[str, tuple[int, ...]]:
            data = self.parts.tokenizer.token_bytes(token_id)
            return data.decode("utf-8", errors="replace"), tuple(data)

        token, data = spelled(lp.token_id)
        top = tuple((name, value, raw) for (name, raw), value in ((spelled(i), v) for i, v in lp.top))
        return Logprob(token, lp.logprob, data, top)

    def _work(self, ids: list[int], registry: ToolRegistry, settings: DecodeSettings,
              processor: Callable[[], Any], stop: tuple[str, ...], emit: Callable[[Event], None],
              cancelled: Callable[[], bool], turn: Turn) -> None:
        tok = self.parts.tokenizer
        text, echo, parser = TextOut(stop), EchoFilter(), ToolCallParser(registry)
        count = 0

        def show(piece: str) -> None:
            for event in _events(parser.feed(echo.feed(piece))):
                emit(event)

        def on_token(token_id: int, lp: TokenLogprob | None) -> None:
            nonlocal count
            if cancelled():
                raise Cancelled
            count += 1
            turn.completion_tokens = count
            if lp is not None:
                emit(self._logprob(lp))
            if not tok.is_special(token_id):
                show(text.feed(tok.token_bytes(token_id)))
            if text.stopped:
                raise _StopSequence

        try:
            with self.lock:
                self.parts.reset()
                turn.prompt_tokens = len(ids)
                self.parts.generate(ids, settings, processor(), on_token, cancelled)
        except Cancelled:
            return
        except _StopSequence:
            pass
        length = count >= settings.max_tokens and not text.stopped
        last = parser.feed(echo.feed(text.finish()) + echo.finish()) + parser.finish()
        for event in _events(_unfinished(last) if length and len(registry) else last):
            emit(event)
        emit(Finish("length" if length else "stop", len(ids), count))
