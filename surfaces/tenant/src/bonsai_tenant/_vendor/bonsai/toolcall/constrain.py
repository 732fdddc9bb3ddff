"""Lazy constrained decoding: free text until `<tool_call>`, then only tokens that keep the call valid.

Like llama.cpp's lazy grammars: no mask at all while the model writes prose, unless the next token
could complete `<tool_call>` itself (then its remainder must be a valid start of a call). Once
inside a call every token whose bytes cannot extend the prefix toward
`{"name": <declared tool>, "arguments": <its schema>}</tool_call>` gets -inf. Masks are cached per
matcher state, so a long string argument costs one trie walk, not one per token.

Protocol for a decoder: `mask()` (None or a (vocab,) bytearray of 0/1), or `apply(logits)`; then
`accept(token_id)` with the token actually chosen. Pure Python (the browser surface has no numpy).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from itertools import compress

from .grammar import call_node
from .matcher import OPEN, CallMatcher, State
from .registry import ToolRegistry
from .trie import TokenTrie

CACHE_STATES = 512
NEG_INF = float("-inf")
_FLIP = bytes.maketrans(b"\x00\x01", b"\x01\x00")  # a 0/1 mask inverted


class ToolCallConstraint:
    """One response's constraint state. Build the TokenTrie once per vocabulary and share it."""

    def __init__(
        self,
        registry: ToolRegistry,
        vocab: Sequence[bytes | None],
        *,
        trie: TokenTrie | None = None,
        force_call: bool = False,
        calls_end_turn: bool = True,
        max_calls: int | None = None,
    ) -> None:
        """`vocab[i]`: the bytes of token i, None for special tokens (never allowed inside a call).

        `force_call`: the response must begin with a tool call (like tool_choice="required").
        `calls_end_turn`: after a call only more calls or a special token (end of turn) may follow,
        as in Hermes/Qwen transcripts; a small model otherwise goes on to invent the result.
        `max_calls`: after this many calls only the end of the turn may follow (1 is OpenAI's
        parallel_tool_calls=false); None for no limit.
        """
        self.matcher = CallMatcher(call_node(registry))
        self.vocab = vocab
        self.trie = trie or TokenTrie(vocab)
        self.force_call = force_call
        self.calls_end_turn = calls_end_turn
        self.max_calls = max_calls
        self._cache: OrderedDict[tuple[State, State | None], bytearray] = OrderedDict()
        self._specials = [tid for tid, v in enumerate(vocab) if not v]
        self._free_cache: dict[int, bytearray | None] = {}
        self._completing = self._tokens_completing_the_tag()
        self.reset()

    def reset(self) -> None:
        """Back to the start of a response."""
        self.state: State | None = self.matcher.start(with_open_tag=True) if self.force_call else None
        self.matched = 0  # free text: how many bytes of `<tool_call>` end the text so far
        self.calls = 0  # calls completed in this response

    @property
    def inside_call(self) -> bool:
        """Inside a <tool_call> block (not between calls, not in free text)."""
        return self.state is not None and not self.matcher.at_turn_end_choice(self.state)

    def _after_call(self, calls: int) -> State | None:
        """Where a call that completes the `calls`-th call leads: free text (None), more calls, or the end."""
        if self.max_calls is not None and calls >= self.max_calls:
            return self.matcher.turn_end()
        return self.matcher.between_calls() if self.calls_end_turn else None

    def _step_fn(self):
        """advance(state, byte) for the trie walk: a completed call continues as `_after_call` says,
        so the bytes of a token after `</tool_call>` are checked too (unless free text follows)."""
        m, after = self.matcher, self._after_call(self.calls + 1)

        def step(state: State, b: int) -> State:
            nxt = m.advance(state, b)
            if after is not None and nxt and m.done(nxt):
                return after
            return nxt

        return step

    def _tokens_completing_the_tag(self) -> dict[int, list[tuple[int, bytes]]]:
        """For each partial match k: tokens that complete `<tool_call>` from k, with their remainder."""
        out: dict[int, list[tuple[int, bytes]]] = {k: [] for k in range(len(OPEN))}
        for tid, data in enumerate(self.vocab):
            if not data or b">" not in data:
                continue
            for k in range(len(OPEN)):
                joined = OPEN[:k] + data
                at = joined.find(OPEN)
                if at != -1 and at + len(OPEN) > k:
                    out[k].append((tid, joined[at + len(OPEN) :]))
        return out

    def _free_mask(self) -> bytearray | None:
        if self.matched not in self._free_cache:
            mask = None
            for tid, rest in self._completing[self.matched]:
                if not self.matcher.feed(self.matcher.start(), rest):
                    mask = bytearray(b"\x01") * self.trie.size if mask is None else mask
                    mask[tid] = 0
            self._free_cache[self.matched] = mask
        return self._free_cache[self.matched]

    def mask(self) -> bytearray | None:
        """Allowed next tokens as a (vocab,) bytearray of 0/1, or None when every token is allowed."""
        if self.state is None:
            return self._free_mask()
        key = (self.state, self._after_call(self.calls + 1))
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        m = self.matcher
        mask = self.trie.allowed(self.state, self._step_fn(), m.done, m.in_string_body, m.forced_byte)
        if m.at_turn_end_choice(self.state):
            for tid in self._specials:
                mask[tid] = 1
        self._cache[key] = mask
        if len(self._cache) > CACHE_STATES:
            self._cache.popitem(last=False)
        return mask

    def apply(self, logits: Sequence[float]) -> Sequence[float]:
        """`logits` (vocab,) with disallowed tokens set to -inf: a new list of floats (the input is
        untouched), or `logits` itself when every token is allowed. Ids past the mask are disallowed."""
        mask = self.mask()
        if mask is None:
            return logits
        tolist = getattr(logits, "tolist", None)  # memoryviews and arrays: one C-level conversion
        values = tolist() if tolist is not None else list(logits)  # a new list either way
        n = min(len(mask), len(values))
        if mask.count(1) * 2 < n:  # mostly refused (inside a call): copy the few allowed values
            out = [NEG_INF] * len(values)
            for i in compress(range(n), mask):
                out[i] = values[i]
            return out
        for i in compress(range(n), mask.translate(_FLIP)):  # mostly allowed: refuse the few others
            values[i] = NEG_INF
        values[n:] = [NEG_INF] * (len(values) - n)
        return values

    def accept(self, token_id: int) -> None:
        """Advance past the token the decoder chose."""
        data = self.vocab[token_id] or b""
        if not data:
            self.state = None  # a special token: the turn ends (inside a call only if the mask was ignored)
            return
        for b in data:
            if self.state is None:
                self.matched = self.matched + 1 if b == OPEN[self.matched] else int(b == OPEN[0])
                if self.matched == len(OPEN):
                    self.state, self.matched = self.matcher.start(), 0
                continue
            nxt: State | None = self.matcher.advance(self.state, b)
            if nxt and self.matcher.done(nxt):
                self.calls += 1
                nxt = self._after_call(self.calls)
            self.state = nxt or None  # empty: the mask was ignored; back to free text, the parser reports it


def vocabulary(tokenizer) -> list[bytes | None]:
    """`vocab` for ToolCallConstraint from a bonsai.tokenizer.Tokenizer: bytes per id, None for specials."""
    return [
        None if tokenizer.is_special(i) else tokenizer.token_bytes(i) for i in range(tokenizer.vocab_size)
    ]
