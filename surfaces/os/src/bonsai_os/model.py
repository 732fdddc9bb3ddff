"""The model seam: a chat `complete(messages, tools, on_text)` on the bonsai engine, or any stand-in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

TextSink = Callable[[str], None]


class ChatModel(Protocol):
    """Generates one assistant message for a conversation, streaming its text; returns why it stopped.

    `messages` are OpenAI-style (tool results as role "tool"); `tools` are function specs.
    """

    def complete(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                 on_text: TextSink, max_tokens: int) -> str: ...


class EngineModel:
    """A GGUF model on the GPU engine, prompted through its own chat template (tools the Hermes way)."""

    def __init__(self, engine: Any, template: Any, temperature: float = 0.0) -> None:
        from bonsai.tools.prompt import ToolPrompt

        self.engine, self.prompt, self.temperature = engine, ToolPrompt.from_chat_template(template), temperature
        tok = engine.tokenizer
        self.stop_ids = {i for i in (engine.cfg.eos_id, _token_id(tok, "<|im_end|>")) if i is not None}

    @classmethod
    def load(cls, path: Path, temperature: float = 0.0) -> EngineModel:
        from bonsai.chat_template import ChatTemplate
        from bonsai.engine import Engine

        engine = Engine.load(path, progress=False)
        return cls(engine, ChatTemplate.from_gguf(engine.reader, engine.tokenizer), temperature)

    def complete(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                 on_text: TextSink, max_tokens: int) -> str:
        from bonsai.engine import Sampling

        tok = self.engine.tokenizer
        ids = tok.encode(self.prompt.render(list(messages), list(tools) or None), allow_special=True)
        self.engine.reset()
        result = self.engine.generate(ids, max_tokens=max_tokens, sampling=Sampling(temperature=self.temperature),
                                      stop_ids=self.stop_ids, decode=tok.decode,
                                      on_token=lambda _id, piece: on_text(piece) if piece else None)
        return "length" if result.stop_reason == "length" else "stop"


def _token_id(tok: Any, text: str) -> int | None:
    try:
        return tok.token_id(text)
    except Exception:  # noqa: BLE001 - a tokenizer without this special token simply has no such stop
        return None
