"""A scripted model for RuntimeBackend: byte tokens, ChatML specials, and replies that obey the masks.

`ScriptedModel(*replies)` is a `generate` function: at each step it puts the highest logit on the
next byte of its first reply that the output so far still follows (the next reply a little lower,
and so on), lets the request's processor mask the row, and picks the best token left, as a real
model under constrained decoding does. A reply that the mask forbids is abandoned for the next one.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
from bonsai_tenant._vendor.bonsai.tokenizer.chat_template import CHATML_TEMPLATE, ChatTemplate
from bonsai_tenant._vendor.bonsai.toolcall.prompt import ToolPrompt
from bonsai_tenant.decode import Cancelled, logprob_of
from bonsai_tenant.runtime_backend import ModelParts, RuntimeBackend
from tenant_load_model import SPECIALS  # bench/: the load test's stand-in shares the byte tokenizer
from tenant_load_model import ByteTokenizer as StandInTokenizer

END = 256 + SPECIALS.index("<|im_end|>")


class ByteTokenizer(StandInTokenizer):
    """The stand-in byte tokenizer, recording every text it was asked to encode."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, text: str, allow_special: bool = True, add_bos: bool = False) -> list[int]:
        self.encoded.append(text)
        return super().encode(text, allow_special, add_bos)


class ScriptedModel:
    """`generate` for ModelParts: writes the first of `replies` the masks allow, byte by byte."""

    def __init__(self, *replies: str | bytes, delay: float = 0.0) -> None:
        self.replies = [r.encode() if isinstance(r, str) else r for r in replies]
        self.delay = delay
        self.prompts: list[list[int]] = []
        self.settings: list = []
        self.steps = 0
        self.running = threading.Event()  # set while a generation runs
        self.stopped = threading.Event()  # set while none runs: never started, finished or cancelled
        self.stopped.set()

    def logits(self, out: bytes) -> np.ndarray:
        row = np.full(ByteTokenizer.vocab_size, -5.0, dtype=np.float32)
        for rank, reply in enumerate(self.replies):
            if reply.startswith(out):
                nxt = reply[len(out)] if len(out) < len(reply) else END
                row[nxt] = max(row[nxt], 10.0 - rank)
        return row

    def __call__(self, prompt_ids, settings, processor, on_token, cancelled) -> list[int]:
        self.prompts.append(list(prompt_ids))
        self.settings.append(settings)
        self.stopped.clear()
        self.running.set()
        out, ids = b"", []
        try:
            while len(ids) < settings.max_tokens:
                if cancelled():
                    raise Cancelled
                raw = self.logits(out)
                row = processor.apply(raw) if processor is not None else raw
                token = int(np.argmax(row))
                if token >= 256:  # a special token ends the turn, as the engine's stop ids do
                    break
                if processor is not None:
                    processor.accept(token)
                self.steps += 1
                ids.append(token)
                out += ByteTokenizer().token_bytes(token)
                on_token(token, logprob_of(raw, token, settings.logprobs) if settings.logprobs is not None else None)
                if self.delay:
                    time.sleep(self.delay)
            return ids
        finally:
            self.running.clear()
            self.stopped.set()


def scripted_backend(*replies: str | bytes, max_positions: int = 4096, delay: float = 0.0,
                     template: str = CHATML_TEMPLATE) -> tuple[RuntimeBackend, ScriptedModel, ByteTokenizer]:
    """A RuntimeBackend on a ScriptedModel, the ChatML template and the byte tokenizer."""
    model, tokenizer = ScriptedModel(*replies, delay=delay), ByteTokenizer()
    prompt = ToolPrompt.from_chat_template(ChatTemplate(template, "test ChatML"))
    parts = ModelParts(model, tokenizer, prompt, max_positions, lambda: None)
    return RuntimeBackend(parts), model, tokenizer


def call_text(name: str, arguments: dict) -> str:
    """A Hermes tool-call block as the model writes it."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'
