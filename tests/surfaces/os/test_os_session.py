"""Session: streamed text, `<tool_call>` blocks run built-in tools, results go back to the model."""

from __future__ import annotations

from bonsai_os.session import Session

from bonsai.tools import ToolRegistry, builtin_registry


class ScriptedModel:
    """Replies with fixed texts in order, split into 3-character pieces (so tags split across chunks)."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict]] = []

    def complete(self, messages, tools, on_text, max_tokens):
        self.seen.append([dict(m) for m in messages])
        self.tools = list(tools)
        reply = self.replies.pop(0)
        for i in range(0, len(reply), 3):
            on_text(reply[i : i + 3])
        return "stop"


def test_plain_reply_streams_and_is_kept_in_history():
    pieces: list[str] = []
    session = Session(ScriptedModel("Paris is the capital."), ToolRegistry())
    assert session.ask("capital of France?", on_text=pieces.append) == "Paris is the capital."
    assert "".join(pieces) == "Paris is the capital."
    assert [m["role"] for m in session.messages] == ["user", "assistant"]


def test_a_tool_call_runs_the_tool_and_the_model_sees_its_result():
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>'
    model = ScriptedModel(call, "It is 42.")
    uses = []
    reply = Session(model, builtin_registry("calculator")).ask("6 times 7?", on_tool=uses.append)
    assert reply == "It is 42."
    assert [(u.name, u.arguments, u.result, u.ok) for u in uses] == [
        ("calculator", {"expression": "6*7"}, "42", True)]
    second_turn = model.seen[1]
    assert second_turn[-2] == {"role": "assistant", "content": call}
    assert second_turn[-1] == {"role": "tool", "content": "42"}


def test_a_malformed_call_goes_back_as_an_error_instead_of_crashing():
    model = ScriptedModel("<tool_call>{not json</tool_call>", "Sorry.")
    uses = []
    assert Session(model, builtin_registry("calculator")).ask("?", on_tool=uses.append) == "Sorry."
    assert not uses[0].ok and "not valid JSON" in uses[0].result
    assert model.seen[1][-1]["content"].startswith("error: ")


def test_tool_rounds_are_bounded():
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
    model = ScriptedModel(*[call] * 10)
    Session(model, builtin_registry("calculator"), max_tool_rounds=2).ask("loop")
    assert len(model.seen) == 3


def test_the_model_is_given_the_registry_specs():
    model = ScriptedModel("ok")
    registry = builtin_registry("calculator,clock")
    Session(model, registry).ask("hi")
    assert model.tools == registry.specs()


class _Tok:
    def encode(self, text, allow_special=True):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)

    def token_id(self, text):
        return 7 if text == "<|im_end|>" else None


class _Engine:
    """Engine.generate's contract: streams `reply` through on_token(id, piece); records the call."""

    tokenizer = _Tok()
    cfg = type("Cfg", (), {"eos_id": 2})()

    def __init__(self, reply):
        self.reply, self.calls, self.resets = reply, [], 0

    def reset(self):
        self.resets += 1

    def generate(self, ids, max_tokens, sampling, *, stop_ids, decode, on_token):
        self.calls.append({"prompt": decode(ids), "stop_ids": stop_ids, "max_tokens": max_tokens})
        for ch in self.reply[:max_tokens]:
            on_token(ord(ch), ch)
        return type("Gen", (), {"stop_reason": "eos"})()


class _Template:
    template = "{{ messages }}"  # does not mention tools: ToolPrompt writes them the Hermes way

    def render(self, messages, tools=None, add_generation_prompt=True):
        return "|".join(f"{m['role']}:{m['content']}" for m in messages)


def test_engine_model_renders_tools_into_the_system_turn_and_streams_pieces():
    from bonsai_os.model import EngineModel

    engine = _Engine("42!")
    pieces = []
    registry = builtin_registry("calculator")
    reason = EngineModel(engine, _Template()).complete([{"role": "user", "content": "6*7?"}], registry.specs(),
                                                       pieces.append, max_tokens=2)
    assert pieces == ["4", "2"] and reason == "stop"
    call = engine.calls[0]
    assert call["stop_ids"] == {2, 7} and call["max_tokens"] == 2 and engine.resets == 1
    assert call["prompt"].startswith("system:You are a helpful assistant.\n\n# Tools")
    assert '"name": "calculator"' in call["prompt"] and call["prompt"].endswith("|user:6*7?")
