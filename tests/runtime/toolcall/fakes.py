"""A byte-per-token tokenizer and a scripted generator: the loop's test doubles."""

from __future__ import annotations

from collections.abc import Callable

EOS = 256


class ByteTokenizer:
    """Token i < 256 is byte i; 256 is the special end token."""

    vocab_size = 257

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def token_bytes(self, token_id: int) -> bytes:
        return b"<|end|>" if token_id == EOS else bytes([token_id])

    def is_special(self, token_id: int) -> bool:
        return token_id == EOS


class ScriptedGenerator:
    """Replays one scripted response per call, checking each token against the processor's mask."""

    def __init__(self, responses: list[str]) -> None:
        self.responses = list(responses)
        self.prompts: list[list[int]] = []
        self.masked_steps = 0

    def __call__(self, prompt_ids: list[int], processor, on_token: Callable[[int], None]) -> list[int]:
        self.prompts.append(prompt_ids)
        out = []
        for tid in self.responses.pop(0).encode("utf-8"):
            if processor is not None:
                mask = processor.mask()
                if mask is not None:
                    self.masked_steps += 1
                    assert mask[tid], (
                        f"the script wrote a token the constraint forbids: {bytes(out + [tid])!r}"
                    )
                processor.accept(tid)
            out.append(tid)
            on_token(tid)
        return out
