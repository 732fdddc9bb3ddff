"""The default model (SmolLM2-135M-Instruct) through the tool loop with constrained decoding on:
"What is 17 * 23? Use the calculator." gives a call that parses and validates, then 391.

Two drivers of the same weights: the numpy reference forward pass (CPU, ~15-40 s here) and the
GPU engine (lavapipe, ~3 minutes here). Both are slow tests: `pytest -m slow tests/runtime/toolcall`.
"""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.gguf import GGUFReader
from bonsai.models import default_model_path
from bonsai.tokenizer import Tokenizer
from bonsai.tokenizer.chat_template import ChatTemplate
from bonsai.toolcall import ToolCallEvent, ToolLoop, ToolPrompt, builtin_registry
from bonsai.toolcall.engine_generate import stop_ids_for
from bonsai.toolcall.validate import errors

QUESTION = "What is 17 * 23? Use the calculator."
REGISTRY = builtin_registry("calculator,clock")


def run_loop(generate, tokenizer, reader):
    prompt = ToolPrompt.from_chat_template(ChatTemplate.from_gguf(reader, tokenizer))
    loop = ToolLoop(generate, tokenizer, REGISTRY, prompt, max_steps=3, tool_choice="required",
                    parallel_calls=False)  # fmt: skip
    return loop.run(QUESTION)


def check(result):
    call = result.steps[0].events[0]
    assert isinstance(call, ToolCallEvent) and call.name == "calculator", result.steps[0].output
    assert errors(call.arguments, REGISTRY.get("calculator").parameters) == []
    assert result.steps[0].results[0].content == "391"
    assert result.finished and "391" in result.answer, result.answer


@pytest.mark.slow
def test_reference_model_calls_the_calculator_and_answers_391():
    from bonsai.reference import ReferenceModel

    path = default_model_path()
    model, reader = ReferenceModel(path), GGUFReader(path)
    tokenizer = Tokenizer.from_gguf(reader)
    stops = stop_ids_for(tokenizer, tokenizer.eos_id)

    def generate(prompt_ids, processor, on_token):
        cache = model.new_cache()
        logits = model.forward(prompt_ids, cache=cache)[-1]
        out = []
        for _ in range(64):
            tok = int(np.argmax(processor.apply(logits)))
            if tok in stops:
                break
            processor.accept(tok)
            out.append(tok)
            on_token(tok)
            logits = model.forward([tok], cache=cache)[-1]
        return out

    check(run_loop(generate, tokenizer, reader))


@pytest.mark.slow
@pytest.mark.gpu
def test_gpu_engine_calls_the_calculator_and_answers_391(gpu):
    from bonsai.engine.native import load_engine
    from bonsai.toolcall.engine_generate import engine_generate

    engine = load_engine(gpu=gpu, kv="f32", progress=False)
    check(run_loop(engine_generate(engine, max_tokens=64), engine.tokenizer, engine.reader))
