"""Turn backend events into OpenAI chat completion objects and `chat.completion.chunk` SSE events."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from .events import Event, Finish, Logprob, TextDelta, ToolCall


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event: `data: <json>` and a blank line."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


class Completion:
    """Accumulates one turn's events; renders the streaming chunks and the final completion."""

    def __init__(self, model: str, logprobs: bool = False) -> None:
        self.id = f"chatcmpl-{secrets.token_hex(12)}"
        self.created = int(time.time())
        self.model = model
        self.text: list[str] = []
        self.tool_calls: list[ToolCall] = []
        self.finish = Finish("stop")
        self.finished = False  # the backend's Finish (with its token counts) arrived
        self.logprobs: list[dict[str, Any]] | None = [] if logprobs else None
        self._unsent: list[dict[str, Any]] = []  # logprob entries not yet in a streamed chunk

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        logprobs = {"content": self._unsent, "refusal": None} if self._unsent else None
        self._unsent = []
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}]}

    def first_chunk(self) -> dict[str, Any]:
        """The opening chunk that carries the role."""
        return self._chunk({"role": "assistant", "content": ""})

    def add(self, event: Event) -> dict[str, Any] | None:
        """Record an event; the streaming chunk for it (None for Finish, see `last_chunk`, and for a
        token's logprob, which rides on the next chunk)."""
        if isinstance(event, Logprob):
            if self.logprobs is not None:
                self.logprobs.append(event.to_openai())
                self._unsent.append(event.to_openai())
            return None
        if isinstance(event, TextDelta):
            self.text.append(event.text)
            return self._chunk({"content": event.text})
        if isinstance(event, ToolCall):
            self.tool_calls.append(event)
            call = {"index": len(self.tool_calls) - 1, **event.to_openai()}
            return self._chunk({"tool_calls": [call]})
        self.finish, self.finished = event, True
        return None

    @property
    def finish_reason(self) -> str:
        """"length" when max_tokens cut the reply, calls or not (a call it cut is dropped); else
        "tool_calls" when the model called tools; else the backend's reason."""
        if self.finish.reason == "length" or not self.tool_calls:
            return self.finish.reason
        return "tool_calls"

    def last_chunk(self) -> dict[str, Any]:
        """The closing chunk with the finish reason and an empty delta."""
        return self._chunk({}, self.finish_reason)

    def usage(self) -> dict[str, int]:
        p, c = self.finish.prompt_tokens, self.finish.completion_tokens
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}

    def usage_chunk(self) -> dict[str, Any]:
        """The extra chunk sent when `stream_options.include_usage` is set: no choices, just usage."""
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "choices": [], "usage": self.usage()}

    def to_dict(self) -> dict[str, Any]:
        """The whole `chat.completion` object."""
        text = "".join(self.text)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.tool_calls:  # the blank lines between calls are no content
            message["content"] = text if text.strip() else None
            message["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        logprobs = {"content": self.logprobs, "refusal": None} if self.logprobs is not None else None
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                             "finish_reason": self.finish_reason}],
                "usage": self.usage()}
