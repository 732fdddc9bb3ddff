"""The prompt the model sees is its own chat template's rendering, tools included (Hermes style)."""

from __future__ import annotations

import functools

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from bonsai.gguf import GGUFReader
from bonsai.models import default_model_path
from bonsai.tokenizer.chat_template import ChatTemplate
from bonsai.toolcall import builtin_registry
from bonsai.toolcall.prompt import ToolPrompt, hermes_messages

TOOLS = builtin_registry("calculator,clock").specs()
CONVERSATION = [
    {"role": "system", "content": "You are SmolLM."},
    {"role": "user", "content": "What is 17 * 23? And the time in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "calculator", "arguments": {"expression": "17 * 23"}},
            },
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "clock", "arguments": {"timezone": "Europe/Paris"}},
            },
        ],
    },  # fmt: skip
    {"role": "tool", "tool_call_id": "call_0", "name": "calculator", "content": "391"},
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "clock",
        "content": "2026-01-02T04:04:05+01:00 (Europe/Paris)",
    },
    {"role": "assistant", "content": "17 * 23 = 391, and it is 04:04 in Paris."},
    {"role": "user", "content": "Thanks. café?"},
]

# Qwen2.5's tool-aware template (the Hermes format), as published with the model.
QWEN25_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


@pytest.fixture(scope="module")
def smollm2() -> ChatTemplate:
    return ChatTemplate.from_gguf(GGUFReader(default_model_path()))


@functools.cache
def oracle_source() -> str:
    """SmolLM2's template string straight from the GGUF metadata."""
    return GGUFReader(default_model_path()).get("tokenizer.chat_template")


def oracle_render(**context) -> str:
    """SmolLM2's template rendered with plain jinja2 (the oracle; ChatTemplate is not involved)."""
    source = oracle_source()
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    return env.from_string(source).render(**context)


def test_smollm2_prompt_is_its_own_template_rendering(smollm2):
    prompt = ToolPrompt.from_chat_template(smollm2)
    assert not prompt.native  # SmolLM2's template knows nothing of tools
    expected = oracle_render(messages=hermes_messages(CONVERSATION, TOOLS), add_generation_prompt=True)
    assert prompt.render(CONVERSATION, TOOLS) == expected
    assert expected.startswith("<|im_start|>system\nYou are SmolLM.\n\n# Tools\n")
    assert "<|im_start|>user\n<tool_response>\n391\n</tool_response>\n<tool_response>\n2026" in expected


def test_without_tools_the_prompt_is_the_plain_template_rendering(smollm2):
    plain = [{"role": "user", "content": "hi"}]
    assert ToolPrompt.from_chat_template(smollm2).render(plain) == oracle_render(
        messages=plain, add_generation_prompt=True
    )


def test_hermes_text_equals_what_a_tool_aware_template_renders(smollm2):
    """SmolLM2 + our Hermes messages == Qwen2.5's own tool rendering, byte for byte."""
    qwen = ToolPrompt.from_chat_template(ChatTemplate(QWEN25_TEMPLATE, "qwen2.5 test template"))
    assert qwen.native
    assert ToolPrompt.from_chat_template(smollm2).render(CONVERSATION, TOOLS) == qwen.render(
        CONVERSATION, TOOLS
    )


def test_native_template_gets_messages_and_tools_unchanged():
    seen = {}

    def render(messages, tools=None, add_generation_prompt=True):
        seen.update(messages=messages, tools=tools)
        return "x"

    ToolPrompt(render, "{% if tools %}{% endif %}").render(CONVERSATION, TOOLS)
    assert seen == {"messages": CONVERSATION, "tools": TOOLS}
