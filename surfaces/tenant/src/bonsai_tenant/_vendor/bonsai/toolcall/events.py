"""What the streaming parser emits: text, a validated tool call, or a tool error for the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"


@dataclass(frozen=True)
class TextEvent:
    """Plain text outside any tool call (chunk boundaries decide how text is split; see coalesce)."""

    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    """A well-formed call to a declared tool whose arguments validate against its schema."""

    index: int  # position among this response's <tool_call> blocks, from 0
    id: str  # "call_<index>": deterministic per response
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolErrorEvent:
    """A <tool_call> block that could not become a call; `message` is written for the model."""

    index: int
    id: str
    message: str
    raw: str  # the block's text as the model wrote it (without the tags)


Event = TextEvent | ToolCallEvent | ToolErrorEvent


def coalesce(events: list[Event]) -> list[Event]:
    """Merge adjacent TextEvents and drop empty ones: the chunking-independent form of a stream."""
    out: list[Event] = []
    for event in events:
        if isinstance(event, TextEvent):
            if not event.text:
                continue
            if out and isinstance(out[-1], TextEvent):
                out[-1] = TextEvent(out[-1].text + event.text)
                continue
        out.append(event)
    return out
