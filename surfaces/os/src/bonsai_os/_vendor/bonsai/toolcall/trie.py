"""A byte trie over the vocabulary, walked with a matcher state to find every allowed token at once.

Tokens are numbered in the trie's pre-order, so the tokens below any node form one contiguous
range of `order`. A node is *plain* when every byte below it is string-safe: in a free string
body the whole range below such a node is allowed without walking it, which is what keeps a
49,152-token mask cheap where most tokens are allowed.

Masks are `bytearray`s of 0/1 per token id (pure Python: the browser surface has no numpy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .matcher import string_safe

BLANK = frozenset(b" \t\n")


class TokenTrie:
    """Built once per vocabulary; `allowed(state, ...)` is a bool mask over token ids."""

    def __init__(self, vocab: Sequence[bytes | None]) -> None:
        self.size = len(vocab)
        nested: dict[int, Any] = {}
        for tid, data in enumerate(vocab):
            if not data:  # special tokens and empty pieces never appear inside a call
                continue
            node = nested
            for b in data:
                node = node.setdefault(b, {})
            node.setdefault(-1, []).append(tid)
        self.children: list[list[tuple[int, int]]] = []  # node -> [(byte, child node)]
        self.tokens: list[list[int]] = []  # node -> token ids ending exactly here
        self.lo: list[int] = []  # node -> first index in `order` of its subtree (itself included)
        self.hi: list[int] = []  # node -> one past the last
        self.plain: list[bool] = []  # node -> every byte strictly below it is string-safe
        self.blank: list[bool] = []  # node -> the bytes leading to it are all whitespace
        order: list[int] = []
        self._flatten(nested, order)
        self.order = order  # (tokens in the trie,) token ids in pre-order

    def _flatten(self, root: dict[int, Any], order: list[int]) -> None:
        """Iterative pre-order numbering (vocabulary pieces can be long; no recursion limit)."""
        new = self._new_node
        stack: list[tuple[dict[int, Any], int, bool]] = [(root, new(), False)]
        while stack:
            nested, idx, leaving = stack.pop()
            if leaving:
                self.hi[idx] = len(order)
                self.plain[idx] = all(string_safe(b) and self.plain[c] for b, c in self.children[idx])
                continue
            self.lo[idx] = len(order)
            order.extend(nested.get(-1, ()))
            self.tokens[idx] = list(nested.get(-1, ()))
            stack.append((nested, idx, True))
            kids = [(b, sub, new()) for b, sub in sorted((k, v) for k, v in nested.items() if k != -1)]
            for b, _, c in kids:
                self.blank[c] = self.blank[idx] and b in BLANK
            self.children[idx] = [(b, c) for b, _, c in kids]
            stack.extend((sub, c, False) for _, sub, c in reversed(kids))

    def _new_node(self) -> int:
        self.children.append([])
        self.tokens.append([])
        self.lo.append(0)
        self.hi.append(0)
        self.plain.append(True)
        self.blank.append(True)
        return len(self.children) - 1

    def allowed(
        self,
        state: Any,
        advance: Callable[[Any, int], Any],
        accepts_rest: Callable[[Any], bool],
        loops_on_safe: Callable[[Any], bool],
        forced_byte: Callable[[Any], int | None] | None = None,
    ) -> bytearray:
        """(vocab,) 0/1 bytes: tokens whose bytes, fed one by one from `state`, never hit a dead state.

        `accepts_rest(s)`: after `s` any bytes are fine (the call closed mid-token).
        `loops_on_safe(s)`: string-safe bytes keep `s` unchanged (a free string body).
        `forced_byte(s)`: the only byte allowed after `s`, if just one. A whitespace-only token that
        stops right before a forced byte c is refused when the token extended by c exists: the
        longer token writes the same bytes, and byte-level BPE never splits ` "` into ` ` + `"`
        (its pre-tokenizer glues a space to what follows), so the split is a tokenization the
        model never saw in training, after which small models lose the thread.
        """
        ids: list[int] = []
        ranges: list[tuple[int, int]] = []
        children, tokens, plain, blank = self.children, self.tokens, self.plain, self.blank
        lo, hi = self.lo, self.hi
        stack = [(0, state)]
        while stack:
            node, st = stack.pop()
            for b, child in children[node]:
                nxt = advance(st, b)
                if not nxt:
                    continue
                if accepts_rest(nxt) or (plain[child] and loops_on_safe(nxt)):
                    ranges.append((lo[child], hi[child]))
                    continue
                if tokens[child]:
                    forced = (
                        forced_byte(nxt)
                        if forced_byte is not None and blank[child] and children[child]
                        else None
                    )
                    if forced is None or not any(b2 == forced and tokens[c2] for b2, c2 in children[child]):
                        ids.extend(tokens[child])
                if children[child]:
                    stack.append((child, nxt))
        mask = bytearray(self.size)
        for tid in ids:
            mask[tid] = 1
        order = self.order
        for a, z in ranges:
            for tid in order[a:z]:
                mask[tid] = 1
        return mask
