"""What the model sees: messages and tools rendered through the model's own chat template.

A template that handles `tools` itself (Qwen2.5/Qwen3, Hermes) gets messages and tools unchanged.
One that does not (SmolLM2's) gets plain messages carrying the same Hermes text those templates
write: the `# Tools` block with `<tools>` JSON appended to the system turn, assistant calls as
`<tool_call>` blocks, and consecutive tool results merged into one user turn of
`<tool_response>` blocks. So for the same conversation both kinds of template render the same
bytes, and the rendering itself is always the model's own template.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

DEFAULT_SYSTEM = "You are a helpful assistant."
TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>"
)

Message = Mapping[str, Any]


def tools_block(tools: Sequence[Mapping[str, Any]]) -> str:
    """The `# Tools` section that follows the system prompt (one JSON function spec per line)."""
    lines = "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools)
    return TOOLS_HEADER + lines + TOOLS_FOOTER


def call_block(call: Mapping[str, Any]) -> str:
    """One assistant tool call (OpenAI form or {"name", "arguments"}) as a Hermes `<tool_call>` block."""
    fn = call.get("function", call)
    arguments = fn["arguments"]
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    args = json.dumps(arguments, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "{fn["name"]}", "arguments": {args}}}\n</tool_call>'


def hermes_messages(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None) -> list[dict]:
    """Plain {role, content} messages that carry tools, calls and results as Hermes text."""
    out: list[dict] = []
    rest = list(messages)
    if tools:
        system = DEFAULT_SYSTEM
        if rest and rest[0]["role"] == "system":
            system = rest.pop(0)["content"]
        out.append({"role": "system", "content": system + tools_block(tools)})
    for m in rest:
        if m["role"] == "tool":
            body = f"<tool_response>\n{m['content']}\n</tool_response>"
            if out and out[-1].get("_tool_turn"):
                out[-1]["content"] += "\n" + body
            else:
                out.append({"role": "user", "content": body, "_tool_turn": True})
        elif m["role"] == "assistant" and m.get("tool_calls"):
            blocks = "\n".join(call_block(c) for c in m["tool_calls"])
            content = m.get("content") or ""
            out.append({"role": "assistant", "content": f"{content}\n{blocks}" if content else blocks})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return [{"role": m["role"], "content": m["content"]} for m in out]


def template_handles_tools(template_source: str) -> bool:
    """Whether a chat template renders `tools` itself (it mentions them)."""
    return "tools" in template_source


class ToolPrompt:
    """Renders a conversation with tools through `render(messages, tools=..., add_generation_prompt=...)`.

    `render` is the model's template, e.g. `bonsai.tokenizer.chat_template.ChatTemplate.render`;
    `template_source` its Jinja text, used to tell whether it handles tools itself.
    """

    def __init__(self, render: Callable[..., str], template_source: str) -> None:
        self.render_template = render
        self.native = template_handles_tools(template_source)

    @classmethod
    def from_chat_template(cls, template: Any) -> ToolPrompt:
        """From a bonsai.tokenizer.chat_template.ChatTemplate."""
        return cls(template.render, template.template)

    def render(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None = None) -> str:
        """The prompt text, ending with the assistant header."""
        if self.native:
            return self.render_template(
                messages, tools=list(tools) if tools else None, add_generation_prompt=True
            )
        return self.render_template(hermes_messages(messages, tools), add_generation_prompt=True)
