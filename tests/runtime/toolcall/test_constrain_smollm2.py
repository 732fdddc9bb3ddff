"""Constrained decoding against the real SmolLM2 vocabulary (49,152 tokens): masking only, no model."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.gguf import GGUFReader
from bonsai.models import default_model_path
from bonsai.tokenizer import Tokenizer
from bonsai.toolcall import builtin_registry
from bonsai.toolcall.constrain import ToolCallConstraint, vocabulary
from bonsai.toolcall.events import TextEvent, ToolCallEvent
from bonsai.toolcall.parser import parse_text
from bonsai.toolcall.trie import TokenTrie

from .recorded_outputs import SAMPLES

REGISTRY = builtin_registry("calculator,clock")


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.from_gguf(GGUFReader(default_model_path()))


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return vocabulary(tokenizer)


@pytest.fixture(scope="module")
def trie(vocab):
    return TokenTrie(vocab)


def brute_force(constraint, vocab) -> np.ndarray:
    m = constraint.matcher
    step = constraint._step_fn()  # the matcher, continuing after `</tool_call>` as the constraint says
    known = set(vocab)
    out = np.zeros(len(vocab), dtype=bool)
    for tid, data in enumerate(vocab):
        s = constraint.state
        for b in data or b"":
            s = step(s, b)
            if not s or m.done(s):
                break
        forced = m.forced_byte(s) if s and not m.done(s) and not (data or b"x").strip(b" \t\n") else None
        out[tid] = bool(data) and bool(s) and not (forced is not None and data + bytes([forced]) in known)
    return out


def test_vocabulary_is_the_tokenizers_bytes_with_specials_removed(tokenizer, vocab):
    assert len(vocab) == tokenizer.vocab_size == 49152
    assert vocab[tokenizer.eos_id] is None
    assert all(
        vocab[i] == tokenizer.token_bytes(i) for i in range(0, 49152, 97) if not tokenizer.is_special(i)
    )


@pytest.mark.parametrize("name", ["single_call", "parallel_calls"])
def test_recorded_calls_are_never_masked(tokenizer, vocab, trie, name):
    """Every token of a valid response, as the real tokenizer splits it, is allowed at its step."""
    c = ToolCallConstraint(REGISTRY, vocab, trie=trie, calls_end_turn=False)  # the sample has text after
    entered = 0
    for tid in tokenizer.encode(SAMPLES[name]):
        mask = c.mask()
        assert mask is None or mask[tid], (tid, tokenizer.token_bytes(tid), c.state)
        was_inside = c.inside_call
        c.accept(tid)
        entered += c.inside_call and not was_inside
    assert entered == sum(isinstance(e, ToolCallEvent) for e in parse_text(SAMPLES[name], REGISTRY))


def test_trie_mask_equals_brute_force_on_real_vocabulary(tokenizer, vocab, trie):
    c = ToolCallConstraint(REGISTRY, vocab, trie=trie)
    prefix = b'<tool_call>\n{"name": "calculator", "arguments": {"expression": "17 * 2'
    checked = 0
    for i in (len(b"<tool_call>"), len(b'<tool_call>\n{"name": "c'), len(b'<tool_call>\n{"name": "calculator"'),
              len(prefix)):  # fmt: skip
        c.state = c.matcher.feed(c.matcher.start(), prefix[len(b"<tool_call>") : i])
        assert np.array_equal(c.mask(), brute_force(c, vocab))
        checked += 1
    assert checked == 4


@pytest.mark.parametrize("seed", range(6))
def test_random_logits_under_the_mask_give_a_valid_call(tokenizer, vocab, trie, seed):
    """Argmax of random logits (nudged toward closing bytes) under the mask always yields a valid call."""
    rng = np.random.default_rng(seed)
    closing = np.array([bool(v) and any(ch in v for ch in b'"}>/') for v in vocab]) * 6.0
    c = ToolCallConstraint(REGISTRY, vocab, trie=trie, force_call=True)
    out = []
    for _ in range(300):
        tid = int(np.argmax(c.apply(rng.normal(size=len(vocab)).astype(np.float32) + closing)))
        out.append(tid)
        c.accept(tid)
        if not c.inside_call:
            break
    assert not c.inside_call, "the call should close within 300 tokens"
    events = parse_text(tokenizer.decode(out), REGISTRY)
    calls = [e for e in events if not isinstance(e, TextEvent)]
    assert calls and all(isinstance(e, ToolCallEvent) for e in calls), tokenizer.decode(out)
    assert all(e.text.strip() == "" for e in events if isinstance(e, TextEvent)), "no prose around calls"
