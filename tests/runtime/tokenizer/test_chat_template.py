"""The GGUF chat template renders exactly the text the model was trained on, in an HF-like sandbox."""

from __future__ import annotations

import pytest

from bonsai.gguf import GGUFReader
from bonsai.models import default_model_path
from bonsai.tokenizer import Tokenizer
from bonsai.tokenizer.chat_template import CHATML_TEMPLATE, ChatTemplate, ChatTemplateError, render_template


@pytest.fixture(scope="module")
def smollm_template() -> ChatTemplate:
    reader = GGUFReader(default_model_path())
    return ChatTemplate.from_gguf(reader, Tokenizer.from_gguf(reader))


def test_default_model_conversation_renders_exactly(smollm_template):
    messages = [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And 3+3?"},
    ]
    assert smollm_template.render(messages) == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n4.<|im_end|>\n"
        "<|im_start|>user\nAnd 3+3?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_own_system_prompt_replaces_the_default_and_no_generation_prompt(smollm_template):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert smollm_template.render(messages, add_generation_prompt=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    )


def test_special_tokens_come_from_the_tokenizer(smollm_template):
    assert smollm_template.source.endswith("tokenizer.chat_template")
    assert (smollm_template.bos_token, smollm_template.eos_token) == ("<|im_start|>", "<|im_end|>")


def test_hf_environment_features():
    src = (
        "{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
        "{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}{{ m.content }}{% endfor %}"
        "{{ bos_token }}"
    )
    out = render_template(
        src,
        tools=[{"name": "météo", "args": {"city": "<Paris>"}}],
        messages=[{"content": "one"}, {"content": "two"}],
        bos_token="<s>",
    )
    # tojson keeps non-ASCII and does not HTML-escape; loopcontrols works; trim_blocks drops the newline
    assert out == '{"name": "météo", "args": {"city": "<Paris>"}}\none<s>'


def test_lstrip_and_trim_blocks():
    src = "A\n    {% if true %}\nB\n    {% endif %}\nC"
    assert render_template(src) == "A\nB\nC"


def test_raise_exception_becomes_a_named_error():
    src = (
        "{% if messages[0]['role'] != 'user' %}{{ raise_exception('first message must be user') }}{% endif %}"
    )
    tpl = ChatTemplate(src, "m.gguf: tokenizer.chat_template")
    with pytest.raises(
        ChatTemplateError, match=r"m\.gguf: tokenizer\.chat_template: template error: first message"
    ):
        tpl.render([{"role": "assistant", "content": "x"}])


def test_sandbox_blocks_unsafe_access_and_syntax_errors_name_the_line():
    with pytest.raises(ChatTemplateError, match="unsafe"):
        render_template("{{ messages.__class__.__mro__ }}", messages=[])
    with pytest.raises(ChatTemplateError, match=r"<template>: line 2: template syntax error"):
        render_template("ok\n{% if %}")
    with pytest.raises(ChatTemplateError, match="unsafe"):
        render_template("{% set _ = messages.append(1) %}", messages=[])


def test_missing_template_falls_back_to_chatml(tmp_path):
    import gguf

    w = gguf.GGUFWriter(tmp_path / "t.gguf", "llama")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tpl = ChatTemplate.from_gguf(GGUFReader(tmp_path / "t.gguf"))
    assert tpl.template == CHATML_TEMPLATE and tpl.source == "default ChatML"
    assert (
        tpl.render([{"role": "user", "content": "hi"}])
        == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
