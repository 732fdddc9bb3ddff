"""OpenAI-format messages and tools -> the messages a model's chat template renders (tools in the system turn)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

TOOLS_HELP = (
    "You may call these tools:\n<tools>\n{specs}\n</tools>\n"
    'To call one, reply with <tool_call>{{"name": "<tool name>", "arguments": {{...}}}}</tool_call>; '
    "its result comes back in a tool message."
)


def _call_block(call: Mapping[str, Any]) -> str:
    fn = call.get("function", {})
    raw = fn.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        arguments = raw
    return "<tool_call>" + json.dumps({"name": fn.get("name"), "arguments": arguments}, ensure_ascii=False) + "</tool_call>"


def template_messages(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Plain {role, content} messages: tool specs appended to the system turn (one is added if
    absent), an assistant's tool calls written back as the `<tool_call>` blocks the model emits."""
    out: list[dict[str, str]] = []
    for m in messages:
        content = m.get("content") or ""
        if m["role"] == "assistant" and m.get("tool_calls"):
            content = content + "".join(_call_block(c) for c in m["tool_calls"])
        role = "system" if m["role"] == "developer" else m["role"]
        out.append({"role": role, "content": content})
    if tools:
        specs = "\n".join(json.dumps(dict(t), ensure_ascii=False) for t in tools)
        help_text = TOOLS_HELP.format(specs=specs)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + help_text}
        else:
            out.insert(0, {"role": "system", "content": help_text})
    return out
