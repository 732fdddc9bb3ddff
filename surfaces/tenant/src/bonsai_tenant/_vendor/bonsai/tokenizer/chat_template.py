"""Render a model's chat template (GGUF `tokenizer.chat_template`, Jinja) the way Hugging Face does.

API:
    tpl = ChatTemplate.from_gguf(reader, tokenizer=None)   # falls back to ChatML when absent
    text = tpl.render(messages, tools=None, add_generation_prompt=True, **extra)
    messages: [{"role": "system" | "user" | "assistant" | "tool", "content": str, ...}]
    tpl.source       where the template came from ("tokenizer.chat_template" or "default ChatML")
    tpl.template     the Jinja source
render_template(source, **context) renders any template string in the same environment.

The environment mirrors transformers' `_compile_jinja_template`: an ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, the loopcontrols extension, a `tojson` filter that does not escape HTML
(json.dumps with ensure_ascii=False), and the globals `raise_exception(msg)` and `strftime_now(fmt)`.
Context: messages, tools, add_generation_prompt, bos_token, eos_token, plus anything in **extra.
Errors (syntax errors, raise_exception, sandbox violations) become ChatTemplateError naming the source.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..errors import BonsaiError

# Used when a GGUF has no template: plain ChatML, what SmolLM2 and Qwen were trained on.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class ChatTemplateError(BonsaiError):
    """A chat template failed to compile or render; names where the template came from."""


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: int | None = None, separators=None, sort_keys=False
) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@lru_cache(maxsize=16)
def _compile(source: str) -> jinja2.Template:
    return _environment().from_string(source)


def render_template(source: str, origin: str = "<template>", **context: Any) -> str:
    """Render Jinja `source` in the HF-compatible sandbox; ChatTemplateError names `origin` on failure."""
    try:
        return _compile(source).render(**context)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise ChatTemplateError(f"{origin}: line {exc.lineno}: template syntax error: {exc.message}") from exc
    except jinja2.exceptions.SecurityError as exc:
        raise ChatTemplateError(f"{origin}: the template tried an unsafe operation: {exc}") from exc
    except jinja2.exceptions.TemplateError as exc:
        raise ChatTemplateError(f"{origin}: template error: {exc.message or exc}") from exc


class ChatTemplate:
    """A chat template plus the special-token strings it may refer to."""

    def __init__(self, template: str, source: str, bos_token: str = "", eos_token: str = "") -> None:
        self.template = template
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token

    @classmethod
    def from_gguf(cls, reader, tokenizer=None) -> ChatTemplate:
        """The template in `reader`'s metadata (ChatML if none); token strings from `tokenizer` if given."""
        template = reader.get("tokenizer.chat_template")
        source = f"{reader.path}: tokenizer.chat_template"
        if not template:
            template, source = CHATML_TEMPLATE, "default ChatML"
        bos = eos = ""
        if tokenizer is not None:
            bos = tokenizer.tokens[tokenizer.bos_id] if tokenizer.bos_id is not None else ""
            eos = tokenizer.tokens[tokenizer.eos_id] if tokenizer.eos_id is not None else ""
        return cls(template, source, bos, eos)

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **extra: Any,
    ) -> str:
        """The prompt text for `messages` (and `tools`), ending with the assistant header if asked."""
        context: dict[str, Any] = {
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            **extra,
            "messages": [dict(m) for m in messages],
            "tools": [dict(t) for t in tools] if tools else None,
            "add_generation_prompt": add_generation_prompt,
        }
        return render_template(self.template, self.source, **context)
