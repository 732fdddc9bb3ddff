"""A chat past the model's whole context on the real engine: the oldest turns go, the chat goes on.

A tiny synthetic Qwen3 model with an 8,192-position context (the default model's), three questions of about
3,000 tokens each: the third cannot fit beside both earlier turns, so the first is left out and it is answered;
a question that could not fit even alone is refused before the engine does any work.
"""

from __future__ import annotations

import pytest
from bonsai_os._vendor.bonsai.errors import BonsaiError
from bonsai_os._vendor.bonsai.toolcall import ToolRegistry
from bonsai_os.model import load_model
from bonsai_os.session import Session

from tests.helpers.synthetic import write_tiny_gguf

TINY = dict(dim=64, n_heads=2, n_kv_heads=1, head_dim=32, ffn_dim=128)


def question(i: int, chars: int = 3000) -> str:
    words = [f"w{(i * 7919 + k * 104729) % 9973}" for k in range(chars // 6)]
    return " ".join(words)[:chars]


@pytest.mark.gpu
def test_three_long_turns_past_the_context_drop_the_oldest_and_the_chat_goes_on(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", "qwen3", context_length=8192, **TINY)
    model = load_model(path, max_tokens=8)
    assert model.max_positions == 8192  # the model's own context, not a cap of 2,048
    session = Session(model, ToolRegistry(), constrained=False, reply_room=8)
    sizes = []
    for i in range(3):
        session.ask(question(i))
        sizes.append(session.prompt_tokens(session.messages))
    assert sizes[1] > 4096 and session.dropped_turns >= 1, sizes
    assert all(n + 8 <= 8192 for n in sizes)
    assert question(0) not in [m["content"] for m in session.messages]  # the oldest turn was left out
    assert session.messages[-2]["content"] == question(2)
    fed = model.generate.engine.pos
    with pytest.raises(BonsaiError, match="shorten it"):
        session.ask(question(3, chars=9000))
    assert model.generate.engine.pos == fed  # refused before any work
