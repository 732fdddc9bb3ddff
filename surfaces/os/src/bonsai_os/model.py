"""Load a GGUF model for the tool loop: the GPU engine's generate function, its tokenizer, its prompt."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LoadedModel:
    """What bonsai.toolcall.ToolLoop needs from a model (any stand-in with the same shape works)."""

    # generate(prompt_ids, processor, on_token) -> new ids (bonsai.toolcall.engine_generate)
    generate: Any
    # encode / token_bytes / is_special / vocab_size (bonsai.tokenizer.Tokenizer)
    tokenizer: Any
    # bonsai.toolcall.prompt.ToolPrompt over the model's own chat template
    prompt: Any


def load_model(path: Path, *, max_tokens: int, temperature: float = 0.0) -> LoadedModel:
    """The model at `path` on the GPU, ready for the loop (KV of a shared prefix is reused between steps)."""
    from ._vendor.bonsai.engine import Sampling
    from ._vendor.bonsai.engine.native import load_engine
    from ._vendor.bonsai.tokenizer.chat_template import ChatTemplate
    from ._vendor.bonsai.toolcall.engine_generate import engine_generate
    from ._vendor.bonsai.toolcall.prompt import ToolPrompt

    engine = load_engine(path, progress=False)
    prompt = ToolPrompt.from_chat_template(ChatTemplate.from_gguf(engine.reader, engine.tokenizer))
    generate = engine_generate(engine, max_tokens=max_tokens, sampling=Sampling(temperature=temperature))
    return LoadedModel(generate, engine.tokenizer, prompt)
