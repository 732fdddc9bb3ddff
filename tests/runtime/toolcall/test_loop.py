"""The tool loop on a scripted generator: calls run, results go back, the answer comes out."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.toolcall import builtin_registry
from bonsai.toolcall.events import ToolCallEvent, ToolErrorEvent
from bonsai.toolcall.loop import ToolLoop
from bonsai.toolcall.prompt import ToolPrompt

from .fakes import ByteTokenizer, ScriptedGenerator

REGISTRY = builtin_registry("calculator,clock")
CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
CALL = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "17 * 23"}}\n</tool_call>'


def make_loop(responses, **options):
    from bonsai.tokenizer.chat_template import ChatTemplate

    gen = ScriptedGenerator(responses)
    prompt = ToolPrompt.from_chat_template(ChatTemplate(CHATML, "test ChatML"))
    return ToolLoop(gen, ByteTokenizer(), REGISTRY, prompt, **options), gen


def test_call_then_answer():
    seen_steps, streamed = [], []
    loop, gen = make_loop([CALL, "17 * 23 = 391."], on_step=seen_steps.append, on_text=streamed.append)
    result = loop.run("What is 17 * 23? Use the calculator.")
    assert result.finished and result.answer == "17 * 23 = 391."
    assert [s.index for s in seen_steps] == [0, 1] and "".join(streamed) == CALL + "17 * 23 = 391."
    first = result.steps[0]
    assert first.events == [ToolCallEvent(0, "call_0", "calculator", {"expression": "17 * 23"})]
    assert [(r.id, r.content, r.ok) for r in first.results] == [("call_0", "391", True)]
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    second_prompt = bytes(gen.prompts[1]).decode()
    assert second_prompt.endswith(
        "<|im_start|>assistant\n" + CALL + "<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n391\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert "# Tools" in second_prompt and gen.masked_steps > 0


def test_parallel_calls_each_get_a_result_in_order():
    both = (
        CALL
        + "\n"
        + '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2 ** 10"}}\n</tool_call>'
    )
    loop, gen = make_loop([both, "391 and 1024"])
    result = loop.run("two sums")
    assert [(r.id, r.content) for r in result.steps[0].results] == [("call_0", "391"), ("call_1", "1024")]
    assert (
        "<tool_response>\n391\n</tool_response>\n<tool_response>\n1024\n</tool_response>"
        in bytes(gen.prompts[1]).decode()
    )


def test_malformed_call_is_fed_back_as_an_error_when_unconstrained():
    bad = '<tool_call>{"name": "calculator", "arguments": {"expr": 1}}</tool_call>'
    loop, gen = make_loop([bad, CALL, "391"], constrained=False)
    result = loop.run("sum")
    assert isinstance(result.steps[0].events[0], ToolErrorEvent)
    assert not result.steps[0].results[0].ok
    assert "missing required property 'expression'" in bytes(gen.prompts[1]).decode()
    assert result.finished and result.answer == "391" and len(result.steps) == 3


def test_failed_tool_result_goes_back_to_the_model():
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1 / 0"}}</tool_call>'
    loop, gen = make_loop([call, "cannot divide by zero"])
    result = loop.run("1/0")
    assert "<tool_response>\nerror: division by zero\n</tool_response>" in bytes(gen.prompts[1]).decode()
    assert result.answer == "cannot divide by zero"


def test_step_limit_stops_a_model_that_never_answers():
    loop, _ = make_loop([CALL] * 3, max_steps=3)
    result = loop.run("loop forever")
    assert not result.finished and result.answer == "" and len(result.steps) == 3


def test_constraint_rejects_a_script_that_breaks_the_schema():
    loop, _ = make_loop(['<tool_call>{"name": "calculator", "arguments": {"expression": 17'])
    with pytest.raises(AssertionError, match="forbids"):
        loop.run("x")


@pytest.mark.parametrize("seed", range(3))
def test_required_tool_choice_with_a_random_model_still_calls_validly(seed):
    """A 'model' of random logits under the mask: the first step is a valid call, whatever it says."""
    rng = np.random.default_rng(seed)
    tok = ByteTokenizer()
    bias = np.array([6.0 if bytes([i]) in b'"}>/' else 0.0 for i in range(256)] + [0.0])

    def random_model(prompt_ids, processor, on_token):
        out = []
        for _ in range(400):
            tid = int(np.argmax(processor.apply(rng.normal(size=257) + bias)))
            if tid == 256:
                break
            processor.accept(tid)
            out.append(tid)
            on_token(tid)
            if not processor.inside_call:
                break
        return out

    from bonsai.tokenizer.chat_template import ChatTemplate

    prompt = ToolPrompt.from_chat_template(ChatTemplate(CHATML, "test ChatML"))
    loop = ToolLoop(random_model, tok, REGISTRY, prompt, max_steps=1, tool_choice="required")
    step = loop.run("anything").steps[0]
    assert len(step.results) == 1 and isinstance(step.events[0], ToolCallEvent), step.output


@pytest.mark.parametrize("echo", [
    "<tool_response>\n391\n</tool_response>",  # what SmolLM2 writes after a calculator result
    "<tool_response>391</tool_response>",
    "<tool_response>\n391\n</tool_response>\n",
])
def test_an_echoed_tool_response_block_is_not_the_answer(echo):
    """Small models copy the tool turn's markup into their reply: the answer is what it wrapped."""
    streamed: list[str] = []
    loop, _ = make_loop([CALL, echo], on_text=streamed.append)
    result = loop.run("What is 17 * 23?")
    assert result.finished and result.answer == "391"
    assert "<tool_response>" not in "".join(streamed) and "</tool_response>" not in "".join(streamed)
    assert result.messages[-1] == {"role": "assistant", "content": "391"}  # the history holds no markup either
