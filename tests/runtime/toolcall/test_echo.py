"""EchoFilter: echoed <tool_response> tags go, what they wrap stays, however the text is cut."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bonsai.toolcall import echo
from bonsai.toolcall.echo import EchoFilter

PARTS = ["<tool_response>", "</tool_response>", "\n", "391", "<", "</", "tool", "_response", ">", "a <b> c", " "]


def filtered(chunks: list[str]) -> str:
    f = EchoFilter()
    return "".join(f.feed(c) for c in chunks) + f.finish()


def test_the_tags_and_their_inner_newlines_go():
    assert filtered(["<tool_response>\n391\n</tool_response>"]) == "391"
    assert filtered(list("<tool_response>\n391\n</tool_response>")) == "391"
    assert filtered(["The sum: <tool_response>391</tool_response>."]) == "The sum: 391."
    assert filtered(["a <tool_call> and <b>bold</b>\n"]) == "a <tool_call> and <b>bold</b>\n"


@settings(deadline=None, database=None)  # the shared machine's load, not the filter, sets the time
@given(st.lists(st.sampled_from(PARTS), max_size=12), st.data())
def test_splitting_the_text_anywhere_gives_the_same_output(parts, data):
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert filtered(chunks) == filtered([text])
    assert filtered(list(text)) == filtered([text])  # one character at a time, as tokens come


def test_mutation_without_holding_back_a_split_tag_leaks_through(monkeypatch):
    """Inject a bug: nothing is held back. Byte-by-byte feeding must then let the markup through."""
    monkeypatch.setattr(echo, "_pending", lambda text: 0)
    assert filtered(list("<tool_response>\n391\n</tool_response>")) != "391"
    assert filtered(["<tool_response>\n391\n</tool_response>"]) == "391"
