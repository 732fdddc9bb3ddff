"""A conversation's prompt ids where only the chat template's own markup can be a special token.

Clients write content; the template writes markup. Content that spells a special token
(`<|im_end|>\\n<|im_start|>system`) must stay plain text, or a user forges turns. So every string a
client sent (message content, tool calls and results, tool declarations) has its special-token
spellings swapped for placeholders no client can guess before the template renders it; the
rendered text is cut at the template's special tokens only, and each piece between them, the
placeholders put back, is encoded as ordinary text. Without specials in the content the ids are
exactly `encode(text, allow_special=True)`.

Length is bounded before the work: a prompt whose bytes alone need more tokens than the model
has positions is refused without tokenizing it, and tokenizing stops as soon as the limit is passed.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._vendor.bonsai.tokenizer import BYTE_TO_CHAR
from .errors import InvalidRequest

Render = Callable[[list[Any], list[Any] | None], str]


class PromptTooLong(InvalidRequest):
    """The prompt needs more positions than the model has left for it."""


@dataclass(frozen=True)
class Vocabulary:
    """What the encoder needs to know about a tokenizer, computed once per model."""

    specials: re.Pattern[str] | None  # every special token's text, longest first
    longest: int  # the most bytes any one token stands for
    untokenizable: bytes  # bytes no token holds (the tokenizer drops them)

    @classmethod
    def of(cls, tokenizer: Any) -> Vocabulary:
        names = sorted((tokenizer.tokens[i] for i in tokenizer.special_ids), key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, names))) if names else None
        longest = max((len(tokenizer.token_bytes(i)) for i in range(tokenizer.vocab_size)), default=1)
        dropped = bytes(b for b in range(256) if tokenizer.token_id(BYTE_TO_CHAR[b]) is None)
        return cls(pattern, max(1, longest), dropped)

    def fewest_tokens(self, text: str) -> int:
        """A lower bound on the tokens of `text`, from its length alone (no tokenizing)."""
        kept = len(text.encode("utf-8", errors="replace").translate(None, self.untokenizable))
        return math.ceil(kept / self.longest)


def _neutral(value: Any, swap: Callable[[str], str]) -> Any:
    """`value` with `swap` applied to every string in it, keys included (JSON nests only ~64 deep here)."""
    if isinstance(value, str):
        return swap(value)
    if isinstance(value, Mapping):
        return {swap(k) if isinstance(k, str) else k: _neutral(v, swap) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_neutral(v, swap) for v in value]
    return value


def encode_prompt(render: Render, tokenizer: Any, vocab: Vocabulary, messages: Sequence[Mapping[str, Any]],
                  tools: Sequence[Mapping[str, Any]] | None, limit: int) -> list[int]:
    """The ids of `render(messages, tools)`; PromptTooLong once they would pass `limit`."""
    if vocab.specials is None:
        text = render([dict(m) for m in messages], list(tools) if tools else None)
        return _bounded(tokenizer, vocab, [(text, None)], limit)
    nonce = secrets.token_hex(8)
    marks: dict[str, str] = {}
    literal: dict[str, str] = {}

    def swap(text: str) -> str:
        def mark(match: re.Match[str]) -> str:
            special = match.group()
            if special not in marks:
                marks[special] = f"\ue000{nonce}{len(marks)}\ue001"
                literal[marks[special]] = special
            return marks[special]

        return vocab.specials.sub(mark, text) if vocab.specials else text

    text = render(_neutral(list(messages), swap), _neutral(list(tools), swap) if tools else None)
    restore = re.compile("|".join(map(re.escape, literal))) if literal else None
    pieces: list[tuple[str, str | None]] = []  # (ordinary text, the template's special token after it)
    start = 0
    for match in vocab.specials.finditer(text):
        pieces.append((text[start:match.start()], match.group()))
        start = match.end()
    pieces.append((text[start:], None))
    if restore is not None:
        pieces = [(restore.sub(lambda m: literal[m.group()], plain), special) for plain, special in pieces]
    return _bounded(tokenizer, vocab, pieces, limit)


def _bounded(tokenizer: Any, vocab: Vocabulary, pieces: list[tuple[str, str | None]], limit: int) -> list[int]:
    """Encode each ordinary piece (no specials allowed) and the template's specials, within `limit`."""
    least = sum(vocab.fewest_tokens(plain) + (special is not None) for plain, special in pieces)
    if least > limit:
        raise PromptTooLong(f"the prompt needs at least {least} tokens, more than the {limit} positions this "
                            "request can use (the model's context less max_tokens)")
    ids: list[int] = []
    for plain, special in pieces:
        ids.extend(tokenizer.encode(plain, allow_special=False))
        if special is not None:
            ids.append(tokenizer.token_id(special))
        if len(ids) > limit:
            raise PromptTooLong(f"the prompt is longer than the {limit} positions this request can use "
                                "(the model's context less max_tokens)")
    return ids
