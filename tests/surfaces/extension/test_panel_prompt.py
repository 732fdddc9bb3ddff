"""A tiny model in the side panel (headless Chromium): the prompt's reading reported and stoppable, a reply
cut at the token limit marked as such. A synthetic model keeps the GPU work small on SwiftShader."""

from __future__ import annotations

import json

import pytest

from .panel import Panel

pytestmark = pytest.mark.timeout(1800)

PAGE_HTML = "<!doctype html><title>A page</title><body><p>Some text.</p></body>"
LONG = "Tell me everything about " + " and ".join(f"the city number {i}" for i in range(40)) + "."


@pytest.fixture(scope="module")
def loaded(browser, model_server):
    """The panel with a tiny synthetic model loaded by URL (KV f32, tools off): (panel, state)."""
    from tests.helpers.synthetic import write_tiny_gguf

    root, base = model_server
    write_tiny_gguf(root / "tiny-chat.gguf", "llama", dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256,
                    context_length=2048, tied=False)
    (root / "prompt.html").write_text(PAGE_HTML)
    with browser.side_panel(f"{base}/prompt.html") as page:
        panel = Panel(page)
        state = panel.settle(300)
        if state["model"] is not None:  # a model stored by an earlier module in this browser
            panel.click("forget-model")
            state = panel.reload(300)
        panel.set_settings(kv="f32", tools=[], max_new_tokens=2, temperature=0)
        errors = len(state["errors"])
        state = panel.load_url(f"{base}/tiny-chat.gguf", 1200)
        assert state["phase"] == "ready" and not state["errors"][errors:], state
        yield panel, state


def test_a_reply_cut_at_the_token_limit_is_marked(loaded):
    panel, _ = loaded
    panel.set_settings(tools=[], max_new_tokens=2)
    turn = panel.send("Hello", 600)
    assert turn["stop_reason"] == "length" and len(turn["tokens"]) == 2, turn
    info = panel.evaluate("[...document.querySelectorAll('#messages .turn-info')].pop().innerText")
    assert info.startswith("cut off: the reply reached the token limit"), info
    assert "Cut off at the limit of 2 new tokens" in panel.text("status")


def test_stop_during_the_prompt_ends_the_turn_before_any_token_with_feedback(loaded):
    panel, _ = loaded
    panel.set_settings(tools=[], max_new_tokens=8)
    turns = len(panel.state()["turns"])
    # send, then press Stop while Python is still queued to read the prompt: it must stop before a token
    shown = panel.evaluate("(() => { const p = document.getElementById('prompt'); p.value = " + json.dumps(LONG) + ";"
                           "p.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));"
                           "document.getElementById('stop').click();"
                           "return [document.getElementById('status').innerText, document.getElementById('stop').disabled]; })()")
    assert shown == ["Stopping…", True], shown  # said at once, and Stop cannot be pressed twice
    panel.page.wait_for(f"window.__bonsai.turns.length > {turns}", 600, "the stopped turn")
    state = panel.settle(60)
    turn = state["turns"][-1]
    assert turn["stop_reason"] == "stopped" and turn["tokens"] == [], turn
    assert state["progress"]["prompt"]["detail"].startswith("Reading the prompt: "), state["progress"]
    assert "Stopped." in panel.text("status")


def test_the_prompt_is_reported_as_it_is_read(loaded):
    panel, _ = loaded
    panel.set_settings(tools=[], max_new_tokens=1)
    panel.click("new-chat")
    panel.page.wait_for("window.__bonsai.turns.length === 0", 60, "the turns cleared")
    turn = panel.send(LONG, 600)
    total = len(turn["prompt_ids"])
    detail = panel.state()["progress"]["prompt"]["detail"]
    assert detail.startswith("Reading the prompt: ") and detail.endswith(f" of {total} tokens"), detail
