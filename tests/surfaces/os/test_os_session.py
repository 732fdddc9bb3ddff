"""Session on the runtime's ToolLoop: streamed text without call blocks, tools run, history kept."""

from __future__ import annotations

import pytest
from bonsai_os._vendor.bonsai.errors import BonsaiError
from bonsai_os._vendor.bonsai.toolcall import ToolRegistry, builtin_registry
from bonsai_os._vendor.bonsai.toolcall.prompt import ToolPrompt
from bonsai_os.model import LoadedModel
from bonsai_os.session import Session


class CharTokenizer:
    """One token per ASCII character: what ToolLoop needs (encode, token_bytes, is_special, vocab_size)."""

    vocab_size = 128

    def encode(self, text, allow_special=True):
        return [ord(c) % 128 for c in text]

    def token_bytes(self, token_id):
        return bytes([token_id])

    def is_special(self, token_id):
        return False


class Scripted:
    """generate(prompt_ids, processor, on_token): plays the next reply one character per token."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.processors: list = []

    def __call__(self, prompt_ids, processor, on_token):
        self.prompts.append("".join(map(chr, prompt_ids)))
        self.processors.append(processor)
        reply = self.replies.pop(0)
        for ch in reply:
            on_token(ord(ch))
        return [ord(c) for c in reply]


def render(messages, tools=None, add_generation_prompt=True):
    return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def model(*replies: str) -> tuple[LoadedModel, Scripted]:
    generate = Scripted(*replies)
    return LoadedModel(generate, CharTokenizer(), ToolPrompt(render, "")), generate


CALL = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n</tool_call>'


def test_plain_reply_streams_and_is_kept_in_history():
    pieces: list[str] = []
    loaded, _ = model("Paris is the capital.")
    session = Session(loaded, ToolRegistry(), constrained=False)
    assert session.ask("capital of France?", on_text=pieces.append) == "Paris is the capital."
    assert "".join(pieces) == "Paris is the capital."
    assert [m["role"] for m in session.messages] == ["user", "assistant"]


def test_a_tool_call_runs_the_tool_is_hidden_from_the_text_and_its_result_goes_back():
    loaded, generate = model("Let me compute. " + CALL, "It is 42.")
    pieces, uses = [], []
    reply = Session(loaded, builtin_registry("calculator"), constrained=False).ask(
        "6 times 7?", on_text=pieces.append, on_tool=uses.append)
    assert reply == "It is 42."
    assert "".join(pieces) == "Let me compute. It is 42."
    assert [(u.name, u.arguments, u.result, u.ok) for u in uses] == [
        ("calculator", {"expression": "6*7"}, "42", True)]
    assert "<tool_response>\n42\n</tool_response>" in generate.prompts[1]


def test_history_carries_into_the_next_question():
    loaded, generate = model("first answer", "second answer")
    session = Session(loaded, ToolRegistry(), constrained=False)
    session.ask("one?")
    session.ask("two?")
    assert generate.prompts[1].startswith("<user>one?<assistant>first answer<user>two?")


def test_a_malformed_call_is_reported_as_a_failed_tool_use():
    loaded, _ = model("<tool_call>\n{not json\n</tool_call>", "Sorry.")
    uses = []
    assert Session(loaded, builtin_registry("calculator"), constrained=False).ask("?", on_tool=uses.append) == "Sorry."
    assert not uses[0].ok and "not valid JSON" in uses[0].result


def test_running_out_of_steps_is_an_error_naming_the_option():
    loaded, _ = model(*[CALL] * 3)
    with pytest.raises(BonsaiError, match="no final answer after 3 tool steps"):
        Session(loaded, builtin_registry("calculator"), max_steps=3, constrained=False).ask("loop")


def test_constrained_decoding_hands_the_engine_a_processor():
    loaded, generate = model("plain")
    Session(loaded, builtin_registry("calculator"), constrained=True).ask("hi")
    assert generate.processors[0] is not None and hasattr(generate.processors[0], "apply")
    loaded, generate = model("plain")
    Session(loaded, builtin_registry("calculator"), constrained=False).ask("hi")
    assert generate.processors == [None]
    loaded, generate = model("plain")
    assert Session(loaded, ToolRegistry(), constrained=True).ask("hi") == "plain"  # no tools: nothing to constrain
    assert generate.processors == [None]


def limited(max_positions: int, *replies: str) -> tuple[LoadedModel, Scripted]:
    generate = Scripted(*replies)
    return LoadedModel(generate, CharTokenizer(), ToolPrompt(render, ""), max_positions), generate


def test_a_chat_longer_than_the_context_drops_its_oldest_turns_and_keeps_going():
    # one position per character: "<user>q1<assistant>a1" is 21 per turn; 10 kept free for the reply
    loaded, generate = limited(100, *[f"a{i}" for i in range(1, 9)])
    session = Session(loaded, ToolRegistry(), constrained=False, reply_room=10)
    for i in range(1, 9):
        assert session.ask(f"q{i}") == f"a{i}"
        assert len(generate.prompts[-1]) + 10 <= 100, generate.prompts[-1]
    assert session.dropped_turns > 0
    last = generate.prompts[-1]
    assert last.endswith("<user>q8<assistant>") and "<user>q1<" not in last and "<user>q7<assistant>a7" in last
    # every kept turn is whole: a user message and its answer
    assert [m["role"] for m in session.messages][::2] == ["user"] * (len(session.messages) // 2)


def test_system_messages_stay_when_turns_are_dropped():
    loaded, generate = limited(90, *[f"a{i}" for i in range(1, 6)])
    session = Session(loaded, ToolRegistry(), constrained=False, reply_room=10)
    session.messages = [{"role": "system", "content": "be brief"}]
    for i in range(1, 6):
        session.ask(f"q{i}")
    assert generate.prompts[-1].startswith("<system>be brief<user>") and session.dropped_turns > 0


def test_a_question_that_cannot_fit_is_refused_before_any_work_with_the_numbers():
    loaded, generate = limited(60, "never")
    session = Session(loaded, ToolRegistry(), constrained=False, reply_room=10)
    with pytest.raises(BonsaiError, match=r"takes 64 positions .* reply 10 more .* context holds 60"):
        session.ask("x" * 47)
    assert generate.prompts == [] and session.messages == []


def test_the_reason_a_reply_ended_is_the_generate_functions():
    loaded, generate = model("cut")
    session = Session(loaded, ToolRegistry(), constrained=False)
    assert session.finish is None
    generate.finish = "length"
    session.ask("?")
    assert session.finish == "length"


def test_tool_choice_required_hands_the_engine_a_processor_that_forces_a_call():
    loaded, generate = model(CALL, "It is 42.")
    session = Session(loaded, builtin_registry("calculator"), constrained=True, tool_choice="required")
    session.ask("6 times 7?")
    assert generate.processors[0].force_call and not generate.processors[1].force_call  # only the first step
    loaded, generate = model("plain")
    Session(loaded, builtin_registry("calculator"), constrained=True).ask("hi")
    assert not generate.processors[0].force_call
