"""Load a GGUF model for the tool loop: the GPU engine's generate function, its tokenizer, its prompt."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LoadedModel:
    """What bonsai.toolcall.ToolLoop needs from a model (any stand-in with the same shape works)."""

    # generate(prompt_ids, processor, on_token) -> new ids (bonsai.toolcall.engine_generate); its
    # `finish` says why the last call ended and its `should_stop` is asked between steps, when it has them
    generate: Any
    # encode / token_bytes / is_special / vocab_size (bonsai.tokenizer.Tokenizer)
    tokenizer: Any
    # bonsai.toolcall.prompt.ToolPrompt over the model's own chat template
    prompt: Any
    # positions the KV cache holds: a conversation's prompt plus its reply must fit (None: no limit)
    max_positions: int | None = None


def load_model(path: Path, *, max_tokens: int, temperature: float = 0.0, seed: int = 0,
               max_positions: int | None = None, should_stop: Callable[[], bool] | None = None,
               on_progress: Callable[[str], None] | None = None) -> LoadedModel:
    """The model at `path` on the GPU, ready for the loop (KV of a shared prefix is reused between steps).

    `max_positions` None: the model's whole context (its GGUF `context_length`); the KV cache's master
    copy lives in host RAM, so a long context costs host memory, not GPU memory.
    """
    from ._vendor.bonsai.engine import Sampling
    from ._vendor.bonsai.engine.native import load_engine
    from ._vendor.bonsai.tokenizer.chat_template import ChatTemplate
    from ._vendor.bonsai.toolcall.engine_generate import engine_generate
    from ._vendor.bonsai.toolcall.prompt import ToolPrompt

    report = on_progress or (lambda _msg: None)
    report(f"loading {path.name} ({path.stat().st_size / 1e6:.0f} MB)")
    # the engine holds min(max_positions, the model's context_length) positions
    engine = load_engine(path, progress=False, max_positions=max_positions if max_positions is not None else 1 << 62)
    report(f"ready on {engine.gpu.description} (KV cache {engine.kv_mode}, {engine.max_positions:,} positions)")
    prompt = ToolPrompt.from_chat_template(ChatTemplate.from_gguf(engine.reader, engine.tokenizer))
    generate = engine_generate(engine, max_tokens=max_tokens, sampling=Sampling(temperature=temperature, seed=seed),
                               should_stop=should_stop)
    return LoadedModel(generate, engine.tokenizer, prompt, engine.max_positions)
