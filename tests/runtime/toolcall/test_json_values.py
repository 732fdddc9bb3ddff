"""The grammar's free-form objects and bare-value start (JSON replies: OpenAI's response_format)."""

from __future__ import annotations

import json

import pytest

from bonsai.toolcall.grammar import compile_schema, json_object_node
from bonsai.toolcall.matcher import CallMatcher

VALID = [b"{}", b'{"a": 1}', b'{"a":1,"b":[true,{"c":null}],"d":"x \\" y"}', b'{"k": {"k": {"k": [-0.5e3, ""]}}}']
INVALID = [b"[1]", b'"x"', b'{"a" 1}', b'{"a": 1,}', b"{a: 1}", b'{"a": }', b" {}", b'{"a": 1}}', b'{"a": "</x"}']


def accepts(m: CallMatcher, text: bytes) -> bool:
    """Whether `text` is exactly one value: every byte allowed, done at the end and not before."""
    state = m.value_start()
    for b in text:
        if m.done(state):
            return False  # a byte after the value closed
        state = m.advance(state, b)
        if not state:
            return False
    return m.done(state)


@pytest.mark.parametrize("text", VALID)
def test_any_object_is_accepted_as_a_bare_value(text):
    assert accepts(CallMatcher(json_object_node()), text), text
    assert isinstance(json.loads(text), dict)


@pytest.mark.parametrize("text", INVALID)
def test_anything_but_one_object_is_refused(text):
    assert not accepts(CallMatcher(json_object_node()), text), text


def test_a_schema_object_as_a_bare_value_keeps_its_required_keys_and_types():
    m = CallMatcher(compile_schema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
    assert accepts(m, b'{"n": 3}')
    assert m.feed(m.value_start(), b"{}") == ()
    assert m.feed(m.value_start(), b'{"n": "3"') == ()
    assert m.feed(m.value_start(), b'{"other": 1') == ()  # declared objects stay closed
