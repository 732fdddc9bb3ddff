"""Streaming parser: text chunks in, TextEvent / ToolCallEvent / ToolErrorEvent out, split-proof.

Invariant: for any way of cutting a text into chunks, `coalesce` of the events is the same.
Text is released as soon as it cannot be the start of `<tool_call>`; a `<` that does not become
the tag comes out as text. Inside a block everything up to `</tool_call>` is buffered, then
parsed once, so a JSON string split across chunks is never seen half-way. Nothing raises: every
malformed block becomes a ToolErrorEvent that names the problem for the model.
"""

from __future__ import annotations

import json
from typing import Any

from .events import CLOSE_TAG, OPEN_TAG, Event, TextEvent, ToolCallEvent, ToolErrorEvent, coalesce
from .registry import ToolRegistry
from .validate import errors


def _partial_tag_start(text: str, tag: str) -> int:
    """Index where a proper prefix of `tag` ending `text` starts, or len(text) if none does."""
    start = text.rfind("<", max(0, len(text) - len(tag) + 1))
    while start != -1:
        if tag.startswith(text[start:]):
            return start
        start = text.rfind("<", max(0, len(text) - len(tag) + 1), start)
    return len(text)


def _no_constants(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


def interpret_block(raw: str, index: int, registry: ToolRegistry) -> ToolCallEvent | ToolErrorEvent:
    """One block's text (between the tags) as a call, or an error saying what to fix."""
    call_id = f"call_{index}"
    hint = 'write <tool_call>{"name": "<tool name>", "arguments": {...}}</tool_call>'

    def error(problem: str) -> ToolErrorEvent:
        return ToolErrorEvent(index, call_id, f"tool call {index} ({call_id}): {problem}; {hint}", raw)

    try:
        obj = json.loads(raw, parse_constant=_no_constants)
    except (json.JSONDecodeError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        where = f" at char {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        return error(f"not valid JSON ({reason}{where})")
    if not isinstance(obj, dict):
        return error("expected a JSON object")
    name = obj.get("name")
    if not isinstance(name, str):
        return error('missing "name" (a string)')
    if name not in registry:
        return error(f"unknown tool {name!r}; declared tools: {', '.join(registry.names()) or '(none)'}")
    arguments = obj.get("arguments", {})
    if not isinstance(arguments, dict):
        return error('"arguments" must be a JSON object')
    extra = sorted(set(obj) - {"name", "arguments"})
    if extra:
        return error(f"unexpected keys {extra}")
    problems = errors(arguments, registry.get(name).parameters, "$.arguments")
    if problems:
        return error(f"arguments for {name!r} do not match its schema: {'; '.join(problems)}")
    return ToolCallEvent(index, call_id, name, arguments)


class ToolCallParser:
    """Feed it text chunks; it yields events. Call `finish()` once at the end of the response."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._buffer = ""  # outside a block: held text that may begin OPEN_TAG; inside: the block so far
        self._inside = False
        self._scanned = 0  # inside a block: how far CLOSE_TAG has been searched for already
        self._count = 0  # blocks opened so far

    def feed(self, chunk: str) -> list[Event]:
        """Events that `chunk` completes (possibly none)."""
        self._buffer += chunk
        events: list[Event] = []
        while True:
            if self._inside:
                end = self._buffer.find(CLOSE_TAG, self._scanned)
                if end == -1:
                    self._scanned = max(0, len(self._buffer) - len(CLOSE_TAG) + 1)
                    return events
                events.append(interpret_block(self._buffer[:end].strip(), self._count, self.registry))
                self._count += 1
                self._buffer = self._buffer[end + len(CLOSE_TAG) :]
                self._inside = False
            else:
                start = self._buffer.find(OPEN_TAG)
                if start == -1:
                    keep = _partial_tag_start(self._buffer, OPEN_TAG)
                    if keep:
                        events.append(TextEvent(self._buffer[:keep]))
                    self._buffer = self._buffer[keep:]
                    return events
                if start:
                    events.append(TextEvent(self._buffer[:start]))
                self._buffer = self._buffer[start + len(OPEN_TAG) :]
                self._inside, self._scanned = True, 0

    def finish(self) -> list[Event]:
        """Flush: a held `<...` prefix is text; an unclosed block is a ToolErrorEvent."""
        events: list[Event] = []
        if self._inside:
            call_id = f"call_{self._count}"
            events.append(
                ToolErrorEvent(
                    self._count,
                    call_id,
                    f"tool call {self._count} ({call_id}): the response ended inside <tool_call> without "
                    f"{CLOSE_TAG}; close every call with {CLOSE_TAG}",
                    self._buffer.strip(),
                )
            )
            self._count += 1
        elif self._buffer:
            events.append(TextEvent(self._buffer))
        self._buffer, self._inside, self._scanned = "", False, 0
        return events


def parse_text(text: str, registry: ToolRegistry) -> list[Event]:
    """All events of a complete response, coalesced."""
    parser = ToolCallParser(registry)
    return coalesce(parser.feed(text) + parser.finish())
