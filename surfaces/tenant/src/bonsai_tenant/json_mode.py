"""`response_format` as constrained decoding: the reply is one JSON object, then the end of the turn.

The same grammar and byte trie as constrained tool calls (`bonsai.toolcall.grammar`, `.matcher`, `.trie`):
`json_object` is any object, `json_schema` an object of its schema (the tools' supported subset,
checked the same way, so whatever the mask lets through validates against the schema).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._vendor.bonsai.errors import BonsaiError
from ._vendor.bonsai.toolcall.grammar import compile_schema, json_object_node
from ._vendor.bonsai.toolcall.matcher import CallMatcher, State
from ._vendor.bonsai.toolcall.trie import TokenTrie
from ._vendor.bonsai.toolcall.validate import check_supported
from .errors import InvalidRequest

CACHE_STATES = 512


def reply_node(response_format: dict[str, Any]) -> Any:
    """The grammar node of a normalized response_format ({"type": "json_object"} or {.., "schema": {...}})."""
    if response_format["type"] == "json_object":
        return json_object_node()
    schema = response_format["schema"]
    where = "response_format.json_schema.schema"
    if schema.get("type") != "object":
        raise InvalidRequest(f"{where}: the root must be {{\"type\": \"object\", ...}}")
    try:
        check_supported(schema, where)
        return compile_schema(schema, where)
    except BonsaiError as exc:
        raise InvalidRequest(str(exc)) from exc
    except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a malformed schema, e.g. a list of properties
        raise InvalidRequest(f"{where}: not a schema this server can follow ({type(exc).__name__})") from exc


class JsonConstraint:
    """One reply's mask: bytes that keep it a prefix of one JSON value of `node`; then only a special token."""

    def __init__(self, node: Any, vocab: Sequence[bytes | None], trie: TokenTrie) -> None:
        self.matcher = CallMatcher(node)
        self.vocab, self.trie = vocab, trie
        self.state: State = self.matcher.value_start()
        self._end = self.matcher.turn_end()
        self._specials = np.array([not v for v in vocab], dtype=bool)
        self._cache: OrderedDict[State, np.ndarray] = OrderedDict()

    def _step(self, state: State, b: int) -> State:
        nxt = self.matcher.advance(state, b)
        return self._end if nxt and self.matcher.done(nxt) else nxt

    def mask(self) -> np.ndarray:
        """Allowed next tokens as a (vocab,) bool array."""
        hit = self._cache.get(self.state)
        if hit is not None:
            self._cache.move_to_end(self.state)
            return hit
        m = self.matcher
        allowed = self.trie.allowed(self.state, self._step, m.done, m.in_string_body, m.forced_byte)  # 0/1 bytes
        mask = np.frombuffer(bytes(allowed), dtype=np.uint8).astype(bool)
        if m.at_turn_end_choice(self.state):
            mask |= self._specials
        self._cache[self.state] = mask
        if len(self._cache) > CACHE_STATES:
            self._cache.popitem(last=False)
        return mask

    def apply(self, logits: Any) -> np.ndarray:
        """`logits` with disallowed tokens at -inf (a copy)."""
        mask = self.mask()
        out = np.array(logits, dtype=np.float32, copy=True)
        out[: mask.shape[0]][~mask] = -np.inf
        out[mask.shape[0]:] = -np.inf
        return out

    def accept(self, token_id: int) -> None:
        """Advance past the chosen token (a special token ends the reply)."""
        data = self.vocab[token_id] or b""
        if not data:
            self.state = self._end
            return
        for b in data:
            self.state = self._step(self.state, b) or self._end
