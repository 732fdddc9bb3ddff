"""Property tests: 10,000 random chunkings of recorded responses give identical events, and random
malformed input never raises out of the parser and never yields a call that fails its schema."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonsai.toolcall.events import TextEvent, ToolCallEvent, ToolErrorEvent
from bonsai.toolcall.parser import parse_text
from bonsai.toolcall.validate import errors

from .recorded_outputs import REGISTRY, SAMPLES
from .test_parser import feed_chunks

NAMES = sorted(SAMPLES)
EXPECTED = {name: parse_text(SAMPLES[name], REGISTRY) for name in NAMES}


def fast(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
    )


def cut(text: str, points: list[int]) -> list[str]:
    edges = [0, *sorted(set(points)), len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:], strict=False)]


CHUNKINGS_PER_EXAMPLE = 10


@fast(1_000)
@given(st.sampled_from(NAMES), st.integers(0, 2**32 - 1))
def test_any_chunking_gives_the_same_events(name, seed):
    """1,000 examples x 10 chunkings = 10,000 random chunkings, cut densities from 0 to 1."""
    rng = random.Random(seed)
    text = SAMPLES[name]
    for _ in range(CHUNKINGS_PER_EXAMPLE):
        density = rng.random()
        chunks = cut(text, [i for i in range(1, len(text)) if rng.random() < density])
        assert "".join(chunks) == text
        assert feed_chunks(chunks) == EXPECTED[name], chunks


PIECES = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<tool_",
        "call>",
        "</",
        "<",
        ">",
        "{",
        "}",
        "[",
        "]",
        '"',
        ":",
        ",",
        "\\",
        " ",
        "\n",
        '"name"',
        '"arguments"',
        '"calculator"',
        '"clock"',
        '"expression"',
        '"timezone"',
        '"17 * 23"',
        "1",
        "-2.5e3",
        "null",
        "true",
        "NaN",
        "é",
        "\x00",
    ]
)
NOISY = st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=40).map("".join)


@fast(600)
@given(NOISY, st.data())
def test_random_malformed_input_never_raises(text, data):
    points = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    events = feed_chunks(cut(text, points))
    assert events == parse_text(text, REGISTRY)
    for event in events:
        assert isinstance(event, TextEvent | ToolCallEvent | ToolErrorEvent)
        if isinstance(event, ToolCallEvent):
            assert errors(event.arguments, REGISTRY.get(event.name).parameters) == []
        else:  # text passes through verbatim
            assert isinstance(event, ToolErrorEvent) or event.text in text
