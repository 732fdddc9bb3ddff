"""`bonsai run PROMPT` and `bonsai chat`: generate text with the GPU engine, streaming to stdout."""

from __future__ import annotations

import sys
from typing import Any

import click

from .options import load_engine, model_options, sampling_options


def _stop_ids(engine: Any) -> set[int]:
    tok = engine.tokenizer
    ids = {engine.cfg.eos_id} if engine.cfg.eos_id is not None else set()
    for special in ("<|im_end|>", "<|endoftext|>"):
        tid = tok.token_id(special)
        if tid is not None:
            ids.add(tid)
    return ids


def _chat_ids(engine: Any, messages: list[dict[str, str]]) -> list[int]:
    from ..tokenizer.chat_template import ChatTemplate

    text = ChatTemplate.from_gguf(engine.reader, tokenizer=engine.tokenizer).render(messages)
    return engine.tokenizer.encode(text, allow_special=True)


def _stream(engine: Any, ids: list[int], max_tokens: int, sampling: Any) -> Any:
    def emit(_tok: int, piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    gen = engine.generate(engine.continue_with(ids), max_tokens=max_tokens, sampling=sampling,
                          stop_ids=_stop_ids(engine), decode=engine.tokenizer.decode, on_token=emit)
    sys.stdout.write("\n")
    sys.stdout.flush()
    n = len(ids)
    click.echo(f"[{n} prompt tokens at {n / max(gen.prefill_s, 1e-9):.1f} tok/s, {len(gen.tokens)} generated at "
               f"{gen.decode_tokens_per_s:.1f} tok/s; stop: {gen.stop_reason}"
               + (f"; recovered from device loss in {sum(gen.recoveries):.2f}s" if gen.recoveries else "") + "]",
               err=True)
    return gen


@click.command()
@click.argument("prompt")
@model_options
@sampling_options
@click.option("--chat", is_flag=True, help="Wrap the prompt as a user turn in the model's chat template.")
def run(prompt: str, model: str | None, kv: str, window: int | None, vram_budget: int | None, max_positions: int,
        max_tokens: int, temperature: float, top_k: int, top_p: float, seed: int, chat: bool) -> None:
    """Continue PROMPT (or answer it with --chat), streaming text to stdout; tokens/s go to stderr."""
    from ..engine import Sampling

    engine = load_engine(model, kv, window, vram_budget, max_positions)
    if chat:
        ids = _chat_ids(engine, [{"role": "user", "content": prompt}])
    else:
        ids = engine.tokenizer.encode(prompt, add_bos=engine.cfg.add_bos)
    _stream(engine, ids, max_tokens, Sampling(temperature, top_k, top_p, seed))


@click.command()
@model_options
@sampling_options
@click.option("--system", default=None, help="A system message for the conversation.")
def chat(model: str | None, kv: str, window: int | None, vram_budget: int | None, max_positions: int,
         max_tokens: int, temperature: float, top_k: int, top_p: float, seed: int, system: str | None) -> None:
    """Talk with the model in its chat template (ChatML). An empty line or /exit (or EOF) quits."""
    from ..engine import Sampling

    engine = load_engine(model, kv, window, vram_budget, max_positions)
    messages = [{"role": "system", "content": system}] if system else []
    sampling = Sampling(temperature, top_k, top_p, seed)
    while True:
        click.echo(">>> ", nl=False, err=True)
        line = sys.stdin.readline()
        if not line or line.strip() in ("", "/exit"):
            return
        messages.append({"role": "user", "content": line.rstrip("\n")})
        gen = _stream(engine, _chat_ids(engine, messages), max_tokens, sampling)
        messages.append({"role": "assistant", "content": gen.text})
