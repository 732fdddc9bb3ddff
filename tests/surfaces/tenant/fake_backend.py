"""A scripted Backend for tests: echoes the user, or calls `get_weather` when asked about weather."""

from __future__ import annotations

import json

from bonsai_tenant.events import Finish, TextDelta, ToolCall


class ScriptedBackend:
    """Deterministic stand-in for the GPU engine, with the same Backend protocol."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def stream(self, messages, *, tools, max_tokens, temperature):
        self.calls.append({"messages": [dict(m) for m in messages], "tools": list(tools),
                           "max_tokens": max_tokens})
        last = messages[-1]
        names = {t["function"]["name"] for t in tools}
        if last["role"] == "tool":
            words = f"The tool said: {last['content']}".split(" ")
        elif "weather" in (last["content"] or "") and "get_weather" in names:
            yield ToolCall("call_0", "get_weather", json.dumps({"city": "Paris"}))
            yield Finish("tool_calls", prompt_tokens=7, completion_tokens=5)
            return
        else:
            words = f"echo: {last['content']}".split(" ")
        words = words[:max_tokens]
        for i, word in enumerate(words):
            yield TextDelta(word if i == 0 else " " + word)
        yield Finish("length" if len(words) == max_tokens else "stop", prompt_tokens=7,
                     completion_tokens=len(words))


def make_backend(spec):
    """The --backend-factory entry point: one ScriptedBackend per model id."""
    return ScriptedBackend()
