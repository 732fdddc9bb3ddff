"""Byte-level BPE tokenizer (vocabulary, merges, special tokens) built from GGUF metadata, pure Python."""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence

from ..gguf import GGUFError, GGUFReader
from .bytelevel import decode_bytelevel, encode_bytelevel
from .pretokenize import PRE_TOKENIZERS

# tokenizer.ggml.token_type values (llama.cpp `llama_token_type`).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6


class TokenizerError(GGUFError):
    """The GGUF's tokenizer metadata cannot be used (wrong model type, unknown pre-tokenizer, ...)."""


class Tokenizer:
    """Byte-level BPE: `encode(text) -> ids`, `decode(ids) -> text`, `token_bytes(id) -> bytes`."""

    def __init__(
        self,
        tokens: Sequence[str],
        merges: Sequence[str],
        token_types: Sequence[int] | None = None,
        pre: str = "gpt2",
        bos_id: int | None = None,
        eos_id: int | None = None,
        source: str = "<tokenizer>",
    ) -> None:
        if pre not in PRE_TOKENIZERS:
            raise TokenizerError(
                source,
                "tokenizer.ggml.pre",
                f"pre-tokenizer {pre!r} is not supported; Bonsai knows {', '.join(sorted(PRE_TOKENIZERS))}",
            )
        self.tokens = list(tokens)
        self.token_types = list(token_types) if token_types is not None else [TOKEN_NORMAL] * len(tokens)
        self.pre = pre
        self.bos_id = bos_id
        self.eos_id = eos_id
        self._split = PRE_TOKENIZERS[pre]
        self._ids = {tok: i for i, tok in enumerate(self.tokens)}
        self._ranks: dict[tuple[str, str], int] = {}
        for rank, merge in enumerate(merges):
            left, sep, right = merge.partition(" ")
            if not sep:
                raise TokenizerError(source, "tokenizer.ggml.merges", f"merge #{rank} {merge!r} has no space")
            self._ranks.setdefault((left, right), rank)
        # Control and user-defined tokens are matched verbatim in text, longest first.
        self.special_ids = {
            i for i, t in enumerate(self.token_types) if t in (TOKEN_CONTROL, TOKEN_USER_DEFINED)
        }
        specials = sorted((self.tokens[i] for i in self.special_ids), key=len, reverse=True)
        self._special_re = re.compile("|".join(map(re.escape, specials))) if specials else None
        self._cache: dict[str, list[int]] = {}
        self._bytes: list[bytes | None] = [None] * len(self.tokens)

    @classmethod
    def from_gguf(cls, reader: GGUFReader) -> Tokenizer:
        """The tokenizer stored in a GGUF file's `tokenizer.ggml.*` metadata."""
        model = reader.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise TokenizerError(
                reader.path,
                "tokenizer.ggml.model",
                f"tokenizer model {model!r} is not supported; Bonsai reads byte-level BPE ('gpt2')",
            )
        return cls(
            tokens=reader.require("tokenizer.ggml.tokens", list),
            merges=reader.require("tokenizer.ggml.merges", list),
            token_types=reader.get("tokenizer.ggml.token_type"),
            pre=reader.get("tokenizer.ggml.pre", "gpt2"),
            bos_id=reader.get("tokenizer.ggml.bos_token_id"),
            eos_id=reader.get("tokenizer.ggml.eos_token_id"),
            source=reader.path,
        )

    @property
    def vocab_size(self) -> int:
        """Number of tokens."""
        return len(self.tokens)

    def token_id(self, token: str) -> int | None:
        """The id of a token by its vocabulary string (e.g. "<|im_end|>"), or None."""
        return self._ids.get(token)

    # -- encoding ------------------------------------------------------------------------------

    def encode(self, text: str, allow_special: bool = True, add_bos: bool = False) -> list[int]:
        """Token ids of `text`; with allow_special, special-token strings in it become their ids."""
        ids: list[int] = [self.bos_id] if add_bos and self.bos_id is not None else []
        if allow_special and self._special_re is not None:
            start = 0
            for m in self._special_re.finditer(text):
                self._encode_ordinary(text[start : m.start()], ids)
                ids.append(self._ids[m.group()])
                start = m.end()
            self._encode_ordinary(text[start:], ids)
        else:
            self._encode_ordinary(text, ids)
        return ids

    def _encode_ordinary(self, text: str, out: list[int]) -> None:
        for piece in self._split(text):
            cached = self._cache.get(piece)
            if cached is None:
                cached = self._bpe(encode_bytelevel(piece))
                if len(self._cache) < 100_000:
                    self._cache[piece] = cached
            out.extend(cached)

    def _bpe(self, word: str) -> list[int]:
        """Apply the merges to one byte-level word: lowest rank first, leftmost first among equals."""
        # Characters (bytes) without a token are dropped before merging, as `tokenizers` does
        # without an unk token (SmolLM2 has no token for a few bytes, e.g. 0x04 and 0x1d).
        syms = [c for c in word if c in self._ids]
        n = len(syms)
        if n == 0:
            return []
        ranks = self._ranks
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        nxt[-1] = -1
        heap: list[tuple[int, int, str, str]] = []
        for i in range(n - 1):
            r = ranks.get((syms[i], syms[i + 1]))
            if r is not None:
                heap.append((r, i, syms[i], syms[i + 1]))
        heapq.heapify(heap)
        while heap:
            _, i, a, b = heapq.heappop(heap)
            j = nxt[i]
            if syms[i] != a or j == -1 or syms[j] != b:
                continue  # stale: one side was merged since
            syms[i] = a + b
            syms[j] = ""
            nxt[i] = nxt[j]
            if nxt[j] != -1:
                prv[nxt[j]] = i
            p, q = prv[i], nxt[i]
            if p != -1 and (r := ranks.get((syms[p], syms[i]))) is not None:
                heapq.heappush(heap, (r, p, syms[p], syms[i]))
            if q != -1 and (r := ranks.get((syms[i], syms[q]))) is not None:
                heapq.heappush(heap, (r, i, syms[i], syms[q]))
        ids: list[int] = []
        i = 0
        while i != -1:
            tid = self._ids.get(syms[i])
            if tid is not None:
                ids.append(tid)
            else:  # a merge result missing from the vocabulary: fall back to its characters
                ids.extend(self._ids[c] for c in syms[i])
            i = nxt[i]
        return ids

    # -- decoding ------------------------------------------------------------------------------

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes token `token_id` stands for (special tokens: their text in UTF-8)."""
        cached = self._bytes[token_id]
        if cached is None:
            tok = self.tokens[token_id]
            raw = None if token_id in self.special_ids else decode_bytelevel(tok)
            cached = raw if raw is not None else tok.encode("utf-8")
            self._bytes[token_id] = cached
        return cached

    def decode(self, ids: Sequence[int], skip_special: bool = False) -> str:
        """Text of `ids`; invalid UTF-8 (a character split across tokens) becomes U+FFFD."""
        data = b"".join(self.token_bytes(i) for i in ids if not (skip_special and i in self.special_ids))
        return data.decode("utf-8", errors="replace")

    def is_special(self, token_id: int) -> bool:
        """Whether `token_id` is a control or user-defined token."""
        return token_id in self.special_ids
