"""Constrained decoding on a tiny vocabulary: the trie mask equals a brute-force oracle, and every
token sequence the mask allows that closes the call parses into one call that validates."""

from __future__ import annotations

import math
from array import array
from typing import Literal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonsai.toolcall import Tool, ToolRegistry, builtin_registry
from bonsai.toolcall.constrain import ToolCallConstraint
from bonsai.toolcall.events import TextEvent, ToolCallEvent
from bonsai.toolcall.matcher import CallMatcher
from bonsai.toolcall.parser import parse_text
from bonsai.toolcall.trie import TokenTrie
from bonsai.toolcall.validate import errors


def plan(steps: list[str], count: int, mode: Literal["fast", "slow"], exact: bool = False,
         ratio: float | None = None) -> str:  # fmt: skip
    """Make a plan.

    Args:
        steps: What to do.
        count: How many times.
        mode: How.
        exact: Whether exactly.
        ratio: A ratio.
    """
    return "ok"


REGISTRY = ToolRegistry([*builtin_registry("calculator,clock"), plan])
PIECES = (
    "<",
    "tool",
    "_call",
    ">",
    "<tool_call>",
    "</tool_call>",
    "</",
    "\n",
    " ",
    "{",
    "}",
    '{"',
    '"',
    '":',
    '",',
    '"}',
    "}}",
    "name",
    "arguments",
    "calculator",
    "clock",
    "calc",
    "ulator",
    "expression",
    "timezone",
    "null",
    "nu",
    "ll",
    "1",
    "7",
    "23",
    "0",
    "-",
    ".",
    "e",
    "E",
    "+",
    "*",
    "a",
    "\\",
    "u",
    "00e9",
    "n",
    "/",
    ":",
    ",",
    "[",
    "]",
    '["',
    '"]',
    ">\n",
    "steps",
    "count",
    "mode",
    "fast",
    "slow",
    "exact",
    "ratio",
    "true",
    "false",
    '"name": "',
    ' "arguments": {',
    "é",
    ">x",
)
SINGLE_BYTES = [bytes([b]) for b in range(0x20, 0x7F) if bytes([b]).decode() not in PIECES]
VOCAB: list[bytes | None] = [None, *(p.encode() for p in PIECES), *SINGLE_BYTES, b"\xc3", b"\xa9", b"\t"]
TRIE = TokenTrie(VOCAB)


def brute_force_mask(constraint: ToolCallConstraint) -> np.ndarray:
    """The oracle: feed every token's bytes through the matcher, one token at a time."""
    m, state = constraint.matcher, constraint.state
    step = constraint._step_fn()  # the matcher, continuing after `</tool_call>` as the constraint says
    out = np.zeros(len(VOCAB), dtype=bool)
    for tid, data in enumerate(VOCAB):
        if not data:
            continue
        s = state
        for b in data:
            if m.done(s):
                break
            s = step(s, b)
            if not s:
                break
        forced = m.forced_byte(s) if s and not m.done(s) and not data.strip(b" \t\n") else None
        out[tid] = bool(s) and not (forced is not None and data + bytes([forced]) in VOCAB)
    return out


def walk(choose, constraint: ToolCallConstraint, limit: int = 200, check_oracle: bool = True) -> bytes | None:
    """Pick allowed tokens with `choose(n)` until the call closes; its bytes, or None at the limit."""
    out = b""
    for _ in range(limit):
        mask = constraint.mask()
        assert mask is not None and any(mask), f"dead end after {out!r}"
        if check_oracle:
            assert np.array_equal(mask, brute_force_mask(constraint)), out
        allowed = np.flatnonzero(mask)
        tid = int(allowed[choose(len(allowed))])
        constraint.accept(tid)
        out += VOCAB[tid] or b""
        if not constraint.inside_call:
            return out
    return None


def assert_one_valid_call(data: bytes) -> ToolCallEvent:
    events = parse_text(data.decode("utf-8", errors="replace"), REGISTRY)
    calls = [e for e in events if not isinstance(e, TextEvent)]
    assert len(calls) == 1 and isinstance(calls[0], ToolCallEvent), (data, events)
    assert errors(calls[0].arguments, REGISTRY.get(calls[0].name).parameters) == []
    return calls[0]


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_sequence_the_mask_allows_parses_and_validates(data):
    constraint = ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE, force_call=True)
    out = walk(lambda n: data.draw(st.integers(0, n - 1)), constraint)
    if out is not None:
        assert_one_valid_call(out)


def test_random_walks_reach_every_tool():
    rng = np.random.default_rng(0)
    names, completed = set(), 0
    for _ in range(200):
        out = walk(lambda n: int(rng.integers(n)), ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE, force_call=True),
                   check_oracle=False)  # fmt: skip
        if out is not None:
            names.add(assert_one_valid_call(out).name)
            completed += 1
    assert completed >= 100, "most random walks should close the call; otherwise the property is vacuous"
    assert names == {"calculator", "clock", "plan"}


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "17 * 23"}}\n</tool_call>',
        '<tool_call>{"name":"clock","arguments":{}}</tool_call>',
        '<tool_call>{"name":"clock","arguments":{"timezone":null}}</tool_call>',
        '<tool_call>{"name": "plan", "arguments": {"mode": "slow", "steps": ["a", "\\u00e9/"], "count": -7,'
        ' "ratio": 1.5e+7, "exact": true}}</tool_call>',
    ],
)
def test_valid_calls_are_allowed_byte_for_byte(text):
    m = CallMatcher(ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE).matcher.node)
    assert m.done(m.feed(m.start(with_open_tag=True), text.encode()))


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "rm", ',  # undeclared tool
        '<tool_call>{"arguments": {}, ',  # name must come first
        '<tool_call>{"name": "calculator", "arguments": {}}',  # missing required property
        '<tool_call>{"name": "calculator", "arguments": {"expression": 17',  # wrong type
        '<tool_call>{"name": "calculator", "arguments": {"expression": "x", "y',  # unknown property
        '<tool_call>{"name": "clock", "arguments": {"timezone": "a</',  # </ inside a string
        '<tool_call>{"name": "plan", "arguments": {"count": 1.',  # integer with a fraction
        '<tool_call>{"name": "plan", "arguments": {"mode": "medium',  # not in the enum
        '<tool_call>{"name": "plan", "arguments": {"ratio": 1e999',  # would overflow to inf
        '<tool_call>{"name": "plan", "arguments": {"steps": ["a",]',  # trailing comma
        '<tool_call>{"name": "clock", "arguments": {}}   \n',  # too much whitespace
        "<tool_call>\n\n{",  # one newline at most around the JSON
        '<tool_call>{ "name"',  # whitespace only after : and ,
        '<tool_call>{"name" :',
        '<tool_call>{"name":  "',
        '<tool_call>{"name": "clock", "arguments": {}} x',  # text before the closing tag
        '<tool_call>{"name": "clock", "arguments": {"timezone": "\x01',  # raw control byte
        '<tool_call>{"name": "clock", "arguments": {"timezone": "\\x',  # bad escape
    ],
)
def test_invalid_prefixes_are_refused(text):
    m = CallMatcher(ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE).matcher.node)
    assert m.feed(m.start(with_open_tag=True), text.encode()) == ()


def test_lazy_free_text_is_unconstrained_until_the_tag():
    c = ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE)
    assert c.mask() is None  # no token here can complete <tool_call>
    for piece in ("<", "tool", "_call"):
        c.accept(VOCAB.index(piece.encode()))
    mask = c.mask()  # ">\n" completes the tag and leaves "\n", a valid start; ">x" leaves "x": refused
    assert mask is not None and mask[VOCAB.index(b">")] and mask[VOCAB.index(b">\n")]
    assert not mask[VOCAB.index(b">x")] and mask[VOCAB.index(b"x")] and sum(mask) == len(VOCAB) - 1
    c.accept(VOCAB.index(b">"))
    assert c.inside_call and not c.mask()[0]  # the special token (EOS) is never allowed inside a call


def test_apply_sets_disallowed_logits_to_minus_infinity():
    c = ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE, force_call=True)
    out = c.apply(np.zeros(len(VOCAB), dtype=np.float32))
    assert np.array_equal(np.isfinite(out), c.mask())
    assert VOCAB[int(np.argmax(out))] in (b"<", b"<tool_call>")


def test_apply_keeps_allowed_logits_and_refuses_the_rest_in_both_regimes():
    """Free text after `<tool_call` (mostly allowed) and inside a call (mostly refused): each logit is
    kept exactly where the mask allows it, -inf elsewhere and past the mask; the input is untouched."""
    partial = ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE)
    for piece in ("<", "tool", "_call"):
        partial.accept(VOCAB.index(piece.encode()))
    inside = ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE, force_call=True)
    for c in (partial, inside):
        logits = array("f", range(len(VOCAB) + 2))  # two ids past the mask
        mask = c.mask()
        out = c.apply(logits)
        assert out == [v if i < len(mask) and mask[i] else -math.inf for i, v in enumerate(logits)]
        assert list(logits) == list(range(len(VOCAB) + 2))
    assert sum(partial.mask()) > len(VOCAB) // 2 > sum(inside.mask())  # both regimes were exercised


def test_mutation_trie_fast_path_without_plain_check_is_caught(monkeypatch):
    """Inject a bug: treat every subtree as string-safe. The oracle comparison must notice."""
    bad = TokenTrie(VOCAB)
    bad.plain = [True] * len(bad.plain)
    c = ToolCallConstraint(REGISTRY, VOCAB, trie=bad, force_call=True)
    for b in b'<tool_call>{"name": "clock", "arguments": {"timezone": "':
        c.state = c.matcher.advance(c.state, b)
    assert not np.array_equal(c.mask(), brute_force_mask(c))


def test_after_a_call_only_more_calls_or_the_end_of_the_turn():
    c = ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE)
    for piece in ("<tool_call>", "{", '"name": "', "clock", '",', ' "arguments": {', "}}", "</tool_call>"):
        c.accept(VOCAB.index(piece.encode()))
    mask = c.mask()
    assert not c.inside_call and mask is not None
    allowed = {VOCAB[i] for i in np.flatnonzero(mask)}
    assert allowed == {None, b"\n", b"<", b"<tool_call>"}  # None: the special (end-of-turn) token
    c.accept(0)
    assert c.mask() is None  # after the end of the turn: free again
    free = ToolCallConstraint(REGISTRY, VOCAB, trie=TRIE, calls_end_turn=False)
    for piece in ("<tool_call>", "{", '"name": "', "clock", '",', ' "arguments": {', "}}", "</tool_call>"):
        free.accept(VOCAB.index(piece.encode()))
    assert free.mask() is None


def _matcher_for(*tools):
    from bonsai.toolcall.grammar import call_node

    return CallMatcher(call_node(ToolRegistry(tools)))


def test_min_length_counts_characters_not_bytes():
    note = Tool("note", "N.", {"type": "object", "properties": {"text": {"type": "string", "minLength": 2}},
                               "required": ["text"]}, lambda text: text)  # fmt: skip
    m = _matcher_for(note)
    head = b'<tool_call>{"name": "note", "arguments": {"text": "'
    assert m.feed(m.start(with_open_tag=True), head + b'\xc3\xa9"') == ()  # one character, two bytes
    assert m.done(m.feed(m.start(with_open_tag=True), head + b'\xc3\xa9\\n"}}</tool_call>'))
    assert errors({"text": "\u00e9"}, note.parameters) and not errors({"text": "\u00e9\n"}, note.parameters)


@pytest.mark.parametrize(
    ("expression", "ok"),
    [(b"17 * 23", True), (b"(1.5e3 - 2) % 7 / 4", True), (b"", False), (b"17 * 23}}", False), (b"x", False)],
)
def test_calculator_expression_is_limited_to_its_pattern(expression, ok):
    m = _matcher_for(REGISTRY.get("calculator"))
    text = (
        b'<tool_call>{"name": "calculator", "arguments": {"expression": "' + expression + b'"}}</tool_call>'
    )
    assert m.done(m.feed(m.start(with_open_tag=True), text)) is ok
    assert (errors({"expression": expression.decode()}, REGISTRY.get("calculator").parameters) == []) is ok


def test_mutation_dropping_required_properties_is_caught():
    """Inject a bug: the grammar forgets `required`. The refusal check above then fails to refuse."""
    from bonsai.toolcall.grammar import ObjNode

    m = _matcher_for(REGISTRY.get("calculator"))
    args = m.node.options[0].values[1]
    assert isinstance(args, ObjNode)
    missing = b'<tool_call>{"name": "calculator", "arguments": {}}</tool_call>'
    assert m.feed(m.start(with_open_tag=True), missing) == ()
    args.required = frozenset()
    assert m.done(m.feed(m.start(with_open_tag=True), missing))
