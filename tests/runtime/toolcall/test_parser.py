"""The streaming parser: golden events for recorded responses, tags and JSON split anywhere."""

from __future__ import annotations

import pytest

from bonsai.toolcall.events import TextEvent, ToolCallEvent, ToolErrorEvent, coalesce
from bonsai.toolcall.parser import ToolCallParser, parse_text

from .recorded_outputs import REGISTRY, SAMPLES, as_json, golden


def feed_chunks(chunks: list[str]) -> list:
    parser = ToolCallParser(REGISTRY)
    events = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return coalesce(events + parser.finish())


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_recorded_response_gives_golden_events(name):
    assert as_json(parse_text(SAMPLES[name], REGISTRY)) == golden(name)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_one_character_at_a_time_equals_whole(name):
    assert feed_chunks(list(SAMPLES[name])) == parse_text(SAMPLES[name], REGISTRY)


def test_text_is_released_as_soon_as_it_cannot_be_a_tag():
    parser = ToolCallParser(REGISTRY)
    assert parser.feed("a <to") == [TextEvent("a ")]
    assert parser.feed("x") == [TextEvent("<tox")]
    assert parser.feed("<") == []
    assert parser.finish() == [TextEvent("<")]


def test_parallel_calls_get_their_own_index_and_id():
    calls = [e for e in parse_text(SAMPLES["parallel_calls"], REGISTRY) if isinstance(e, ToolCallEvent)]
    assert [(c.index, c.id, c.name) for c in calls] == [
        (0, "call_0", "clock"),
        (1, "call_1", "calculator"),
        (2, "call_2", "clock"),
    ]


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ('{"name": "calculator", "arguments": {"expression": "1"}', "not valid JSON"),  # unbalanced
        ('{"name": "calculator", "arguments": {"expression": "1"}}}', "not valid JSON"),
        ("{'name': 'calculator'}", "not valid JSON"),
        ('{"name": "calculator", "arguments": {"expression": NaN}}', "not valid JSON"),
        ("[" * 100_000, "not valid JSON"),
        ('"calculator"', "expected a JSON object"),
        ('{"arguments": {}}', 'missing "name"'),
        ('{"name": "rm", "arguments": {}}', "unknown tool 'rm'; declared tools: calculator, clock"),
        ('{"name": "calculator", "arguments": "17*23"}', '"arguments" must be a JSON object'),
        ('{"name": "calculator", "arguments": {}}', "missing required property 'expression'"),
        ('{"name": "clock", "arguments": {"timezone": 5}}', "$.arguments.timezone: matches none"),
        ("", "not valid JSON"),
    ],
)
def test_malformed_blocks_become_tool_errors(block, problem):
    (event,) = parse_text(f"<tool_call>{block}</tool_call>", REGISTRY)
    assert isinstance(event, ToolErrorEvent) and problem in event.message
    assert (event.index, event.id, event.raw) == (0, "call_0", block.strip())


def test_unclosed_block_at_end_is_an_error_not_text():
    events = parse_text('ok <tool_call>{"name": "clock"', REGISTRY)
    assert events[0] == TextEvent("ok ")
    assert isinstance(events[1], ToolErrorEvent) and "without </tool_call>" in events[1].message


def test_parser_can_be_reused_after_finish():
    parser = ToolCallParser(REGISTRY)
    parser.feed("<tool_call>{")
    parser.finish()
    assert parser.feed("plain") + parser.finish() == [TextEvent("plain")]


def test_mutation_releasing_partial_tags_early_is_caught(monkeypatch):
    """Inject the classic bug (emit `<tool_` as text before knowing it is a tag): the check sees it."""
    import bonsai.toolcall.parser as parser_module

    monkeypatch.setattr(parser_module, "_partial_tag_start", lambda text, tag: len(text))
    assert feed_chunks(list(SAMPLES["single_call"])) != parse_text(SAMPLES["single_call"], REGISTRY)
