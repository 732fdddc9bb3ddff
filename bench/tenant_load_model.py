"""A stand-in model for the tenant load test: the real RuntimeBackend over a byte tokenizer and a
generate that writes a fixed reply at a fixed pace, logging each turn (tokens, cancelled) as a JSON line.

`bonsai-tenant serve --backend-factory tenant_load_model:make_backend` (with bench/ on PYTHONPATH);
$BONSAI_LOAD_LOG names the log, $BONSAI_LOAD_TOKEN_S the seconds per token (default 0.02).
"""

from __future__ import annotations

import json
import os
import threading
import time

from bonsai_tenant._vendor.bonsai.tokenizer import BYTE_TO_CHAR
from bonsai_tenant._vendor.bonsai.tokenizer.chat_template import CHATML_TEMPLATE, ChatTemplate
from bonsai_tenant._vendor.bonsai.toolcall.prompt import ToolPrompt
from bonsai_tenant.decode import Cancelled
from bonsai_tenant.runtime_backend import ModelParts, RuntimeBackend

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
REPLY = b"The quick brown fox jumps over the lazy dog. " * 40


class ByteTokenizer:
    """Token b < 256 is byte b; 256.. are the ChatML specials (the tenant tests' scripted model uses it too)."""

    tokens = [BYTE_TO_CHAR[b] for b in range(256)] + SPECIALS
    special_ids = frozenset(range(256, 256 + len(SPECIALS)))
    vocab_size = len(tokens)

    def encode(self, text: str, allow_special: bool = True, add_bos: bool = False) -> list[int]:
        ids: list[int] = []
        while text:
            hits = [(text.find(s), s) for s in SPECIALS if allow_special and s in text]
            at, special = min(hits) if hits else (len(text), "")
            ids.extend(text[:at].encode("utf-8"))
            if special:
                ids.append(256 + SPECIALS.index(special))
            text = text[at + len(special):]
        return ids

    def token_bytes(self, token_id: int) -> bytes:
        return SPECIALS[token_id - 256].encode() if token_id >= 256 else bytes([token_id])

    def token_id(self, text: str) -> int | None:
        return self.tokens.index(text) if text in self.tokens else None

    def is_special(self, token_id: int) -> bool:
        return token_id >= 256


class PacedModel:
    """`generate` for ModelParts: REPLY at one token per `seconds`, stopping when cancelled."""

    def __init__(self, seconds: float, log: str | None) -> None:
        self.seconds, self.log = seconds, log
        self.lock = threading.Lock()

    def _record(self, **fields: object) -> None:
        if self.log:
            with self.lock, open(self.log, "a") as f:
                f.write(json.dumps(fields) + "\n")

    def __call__(self, prompt_ids, settings, processor, on_token, cancelled) -> list[int]:
        out: list[int] = []
        started = time.monotonic()
        try:
            for token in REPLY[: settings.max_tokens]:
                if cancelled():
                    raise Cancelled
                time.sleep(self.seconds)
                out.append(token)
                on_token(token, None)
        except Cancelled:
            self._record(tokens=len(out), cancelled=True, seconds=time.monotonic() - started)
            raise
        self._record(tokens=len(out), cancelled=False, seconds=time.monotonic() - started)
        return out


def make_backend(spec) -> RuntimeBackend:
    """The --backend-factory entry point."""
    model = PacedModel(float(os.environ.get("BONSAI_LOAD_TOKEN_S", "0.02")), os.environ.get("BONSAI_LOAD_LOG"))
    prompt = ToolPrompt.from_chat_template(ChatTemplate(CHATML_TEMPLATE, "ChatML"))
    return RuntimeBackend(ModelParts(model, ByteTokenizer(), prompt, 4096, lambda: None))
