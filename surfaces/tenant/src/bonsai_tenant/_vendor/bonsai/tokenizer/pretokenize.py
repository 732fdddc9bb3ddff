"""Pre-tokenizers (text -> pieces) of the GPT-2, SmolLM and Qwen2 byte-level BPE families, without `regex`.

Pyodide has neither the `regex` module nor numpy, and Python's `re` has no \\p{L} / \\p{N}, so each
pattern is implemented as a hand-written scanner over Unicode general categories (unicodedata):
    \\p{L} = category L*,  \\p{N} = category N*,  \\s = the Unicode White_Space property
    (as Oniguruma/Rust see it: not Python's str.isspace, which also counts U+001C..U+001F).
The scanners reproduce these patterns exactly, alternation order and backtracking included:
    gpt2    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
    smollm  every \\p{N} character split off on its own first (HF `Digits(individual_digits=True)`),
            then gpt2 on the rest (SmolLM2, StarCoder)
    qwen2   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*
            |\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+
Known deviation: categories come from the Python build's Unicode version (3.11: Unicode 14), so
characters assigned in later Unicode versions may classify differently from the `tokenizers` library.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

# Unicode White_Space property (PropList.txt), which Oniguruma's \s matches.
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

LETTER, NUMBER, SPACE, OTHER = "L", "N", "S", "P"
_CLASS_CACHE: dict[str, str] = {}


def char_class(c: str) -> str:
    """LETTER, NUMBER, SPACE or OTHER for one character."""
    k = _CLASS_CACHE.get(c)
    if k is None:
        if c in WHITE_SPACE:
            k = SPACE
        else:
            cat = unicodedata.category(c)[0]
            k = LETTER if cat == "L" else NUMBER if cat == "N" else OTHER
        _CLASS_CACHE[c] = k
    return k


_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")


def _contraction(s: str, i: int, ignore_case: bool) -> int:
    """Length of a contraction ('s, 're, ...) starting at s[i] == "'", or 0."""
    for suffix in _CONTRACTIONS:
        end = i + 1 + len(suffix)
        tail = s[i + 1 : end]
        if (tail.lower() if ignore_case else tail) == suffix:
            return end - i
    return 0


def _run(s: str, j: int, cls: str) -> int:
    """End of the run of characters of class `cls` starting at j."""
    n = len(s)
    while j < n and char_class(s[j]) == cls:
        j += 1
    return j


def _whitespace(s: str, i: int) -> int:
    """End of `\\s+(?!\\S)|\\s+` at i (s[i] is whitespace)."""
    end = _run(s, i, SPACE)
    if end == len(s) or end - i == 1:
        return end
    return end - 1  # leave the last blank to prefix the next word


def split_gpt2(s: str) -> list[str]:
    """Pieces of `s` under the GPT-2 byte-level pattern."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "'" and (k := _contraction(s, i, ignore_case=False)):
            out.append(s[i : i + k])
            i += k
            continue
        j = i + 1 if c == " " and i + 1 < n and char_class(s[i + 1]) != SPACE else i
        cls = char_class(s[j])
        if cls == SPACE:
            end = _whitespace(s, i)
        else:
            end = _run(s, j, cls)
        out.append(s[i:end])
        i = end
    return out


def split_smollm(s: str) -> list[str]:
    """Pieces of `s` under SmolLM2's pre-tokenizer: each number character alone, then GPT-2."""
    out: list[str] = []
    start = 0
    for i, c in enumerate(s):
        if char_class(c) == NUMBER:
            if start < i:
                out.extend(split_gpt2(s[start:i]))
            out.append(c)
            start = i + 1
    if start < len(s):
        out.extend(split_gpt2(s[start:]))
    return out


def split_qwen2(s: str) -> list[str]:
    """Pieces of `s` under the Qwen2/Qwen3 pattern."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        cls = char_class(c)
        if c == "'" and (k := _contraction(s, i, ignore_case=True)):
            end = i + k
        elif cls == LETTER:
            end = _run(s, i, LETTER)
        elif cls != NUMBER and c not in "\r\n" and i + 1 < n and char_class(s[i + 1]) == LETTER:
            end = _run(s, i + 1, LETTER)
        elif cls == NUMBER:
            end = i + 1
        elif cls == OTHER or (c == " " and i + 1 < n and char_class(s[i + 1]) == OTHER):
            end = _run(s, i + 1 if c == " " else i, OTHER)
            while end < n and s[end] in "\r\n":
                end += 1
        else:  # whitespace: \s*[\r\n]+ first, then \s+(?!\S), then \s+
            run_end = _run(s, i, SPACE)
            last_newline = max(s.rfind("\r", i, run_end), s.rfind("\n", i, run_end))
            end = last_newline + 1 if last_newline >= 0 else _whitespace(s, i)
        out.append(s[i:end])
        i = end
    return out


PRE_TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "gpt2": split_gpt2,
    "smollm": split_smollm,
    "starcoder": split_smollm,
    "qwen2": split_qwen2,
}
