"""The chat side panel in a real headless Chromium, driven as a person drives it; answers equal native.

One panel for the module (each model load compiles the shaders on SwiftShader: minutes on a busy
CPU): opened by clicking the toolbar button on a served page, it loads the default model from a
localhost URL into OPFS in the best KV mode (q4res), answers a plain prompt with the native greedy
tokens, finds the model in OPFS after a reload, and runs the calculator and read_page tools with
the same calls, results and answers as native `bonsai tools chat`. Stop, new chat and a dropped
file are driven the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bonsai.models import default_model_path

from .conftest import SERVED
from .panel import Panel

pytestmark = pytest.mark.timeout(1800)

REPO = Path(__file__).resolve().parents[3]
KV = "q4res"
PROMPT = "The capital of France is"
N_TOKENS = 4  # a handful: SwiftShader decodes slowly
PAGE_TEXT = "The secret word is pumpkin."
PAGE_HTML = f"<!doctype html><title>Known page</title><body><h1>Notes</h1><p>{PAGE_TEXT}</p></body>"


@pytest.fixture(scope="module")
def served(model_server) -> tuple[str, str]:
    """(URL of the default model, URL of a page with known text) on localhost."""
    root, base = model_server
    model = Path(default_model_path())
    if not (root / model.name).exists():
        (root / model.name).symlink_to(model)
    (root / "known.html").write_text(PAGE_HTML)
    return f"{base}/{model.name}", f"{base}/known.html"


@pytest.fixture(scope="module")
def panel(browser, served):
    """The side panel, opened on the known page, before any model is chosen."""
    with browser.side_panel(served[1]) as page:
        yield Panel(page)


@pytest.fixture(scope="module")
def loaded(panel, served) -> dict:
    """The panel after choosing the default model by URL in KV mode q4res (the panel's state then)."""
    first = panel.settle(300)
    assert first["model"] is None and first["phase"] == "choose-model", first
    assert "SmolLM2-135M-Instruct" in panel.text("suggested-name")
    panel.set_settings(kv=KV, tools=[], max_new_tokens=N_TOKENS, temperature=0)
    errors = len(first["errors"])
    state = panel.load_url(served[0], 1200)
    assert state["phase"] == "ready" and not state["errors"][errors:], state
    return state


def test_a_file_that_is_not_a_gguf_is_a_named_error_and_nothing_is_stored(panel, served, model_server):
    root, base = model_server
    (root / "not-a-model.gguf").write_bytes(b"GGUX" + Path(default_model_path()).read_bytes()[4:4096])
    state = panel.settle(300)
    assert state["phase"] == "choose-model", state  # runs before the module's model is loaded
    state = panel.load_url(f"{base}/not-a-model.gguf", 120)
    error = state["errors"][-1]
    assert state["phase"] == "choose-model" and state["model"] is None, state
    assert error["type"] == "BadMagicError" and error["field"] == "magic" and error["path"] == "not-a-model.gguf"
    assert "Model: BadMagicError" in panel.text("error") and "not-a-model.gguf" in panel.text("error")
    assert panel.opfs_files() == []  # the checked-and-refused file was not kept, not even under a temporary name


def test_a_dropped_file_goes_through_the_same_check(panel, model_server):
    """Drag and drop: a file dropped on the drop zone is checked as a picked one (here refused, by name)."""
    root, base = model_server
    (root / "dropped.gguf").write_bytes(b"GGUX" + Path(default_model_path()).read_bytes()[4:4096])
    state = panel.settle(300)
    assert state["phase"] == "choose-model", state  # runs before the module's model is loaded
    errors = len(state["errors"])
    panel.evaluate("(async () => { const bytes = await (await fetch(" + json.dumps(f"{base}/dropped.gguf") + ")).arrayBuffer();"
                   "const dt = new DataTransfer(); dt.items.add(new File([bytes], 'dropped.gguf'));"
                   "document.getElementById('drop-zone').dispatchEvent(new DragEvent('drop', "
                   "{dataTransfer: dt, bubbles: true, cancelable: true})); })()", await_promise=True)
    panel.page.wait_for(f"window.__bonsai.errors.length > {errors}", 120, "the dropped file's error")
    state = panel.settle(120)
    error = state["errors"][-1]
    assert state["phase"] == "choose-model" and state["model"] is None, state
    assert error["type"] == "BadMagicError" and error["path"] == "dropped.gguf", error
    assert "dropped.gguf" in panel.text("error") and panel.opfs_files() == []


def test_the_default_model_loads_from_a_url_into_opfs_and_answers_with_the_native_greedy_tokens(panel, loaded, gpu):
    from bonsai.cli.run import _chat_ids, _stop_ids  # what `bonsai run --chat` does: the oracle
    from bonsai.engine import Sampling
    from bonsai.engine.native import load_engine

    model = loaded["model"]
    assert model["source"] == "url" and model["kv"] == KV and model["shaders"] > 0, model
    assert panel.opfs_files() == [model["name"]]  # kept under its own name, no temporary left
    assert {"boot", "model", "shaders"} <= set(loaded["progress"]), loaded["progress"]
    turn = panel.send(PROMPT, 1200)

    native = load_engine(None, gpu=gpu, kv=KV, progress=False, max_positions=2048)
    ids = _chat_ids(native, [{"role": "user", "content": PROMPT}])
    gen = native.generate(ids, max_tokens=N_TOKENS, sampling=Sampling(), stop_ids=_stop_ids(native),
                          decode=native.tokenizer.decode)
    assert turn["prompt_ids"] == ids and turn["tokens"] == gen.tokens and turn["text"] == gen.text, (turn, gen)
    shown = panel.text("messages")
    assert PROMPT in shown and gen.text.strip() in shown and "tokens/s" in panel.text("status")
    print(f"\npanel {KV}: {turn['tokens']} {turn['text']!r} at {turn['tokens_per_s']} tok/s "
          f"(load {model['load_s']} s, warm-up {model['warm_s']} s); native {gen.decode_tokens_per_s:.3f} tok/s")


def test_a_reload_finds_the_model_in_opfs_and_keeps_the_settings(panel, loaded, served):
    before = panel.stored_settings()
    asked = len(SERVED)
    state = panel.reload(1200)
    assert not [p for p in SERVED[asked:] if p.endswith(".gguf")], SERVED[asked:]  # not fetched again
    assert state["phase"] == "ready" and not state["errors"], state
    assert state["model"]["source"] == "opfs" and state["model"]["name"] == loaded["model"]["name"], state["model"]
    assert state["model"]["kv"] == KV and panel.stored_settings() == before, (state["model"], before)
    assert panel.evaluate("document.getElementById('kv').value") == KV
    assert panel.opfs_files() == [loaded["model"]["name"]]


def test_new_chat_forgets_the_conversation_and_stop_ends_a_reply(panel, loaded):
    panel.set_settings(tools=[], max_new_tokens=N_TOKENS)
    first = panel.state()["turns"][0] if panel.state()["turns"] else panel.send(PROMPT, 1200)
    again = panel.send(PROMPT, 1200)  # the same message in the same chat: the history is in its prompt
    assert again["prompt_ids"][: len(first["prompt_ids"])] == first["prompt_ids"]
    assert len(again["prompt_ids"]) > len(first["prompt_ids"]), again
    panel.click("new-chat")
    panel.page.wait_for("window.__bonsai.turns.length === 0", 60, "the turns cleared")
    assert panel.text("messages").strip() == ""
    fresh = panel.send(PROMPT, 1200)  # a new chat starts from the first turn's prompt: same ids, same answer
    assert fresh["prompt_ids"] == first["prompt_ids"] and fresh["tokens"] == first["tokens"], (fresh, first)

    limit = 48
    panel.set_settings(max_new_tokens=limit)
    turns = len(panel.state()["turns"])
    panel.evaluate("(() => { const p = document.getElementById('prompt'); p.value = 'Tell me a long story.';"
                   "p.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); })()")
    panel.page.wait_for("window.__bonsai.phase === 'generating'", 60, "the reply starting")
    panel.click("stop")
    panel.page.wait_for(f"window.__bonsai.turns.length > {turns}", 1200, "the stopped reply")
    stopped = panel.settle(60)["turns"][-1]
    # seen before the next prompt batch or token: it may end the turn before its first token
    assert stopped["stop_reason"] == "stopped" and len(stopped["tokens"]) < limit, stopped
    assert panel.state()["phase"] == "ready" and "Stopped." in panel.text("status")
    panel.set_settings(max_new_tokens=N_TOKENS)


def _native_tools_chat(message: str, tools: str, max_tokens: int) -> list[str]:
    """`bonsai tools chat` on the same model and KV mode: its printed lines."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "runtime"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "bonsai", "tools", "chat", message, "--tools", tools, "--required",
                          "--no-parallel-calls", "--max-tokens", str(max_tokens), "--kv", KV], capture_output=True,
                         text=True, env=env,
                         timeout=1200, check=True).stdout
    lines = out.splitlines()
    answer = next(i for i, line in enumerate(lines) if line.startswith("answer: "))  # the rest is the answer
    return [line for line in lines[:answer] if line.startswith("[step ")] + ["\n".join(lines[answer:])]


def _as_cli_lines(turn: dict) -> list[str]:
    """The panel's tool turn in `bonsai tools chat`'s words (show_step's lines, then the answer)."""
    lines = []
    for step in turn["steps"]:
        for call in step["calls"]:
            lines.append(f"[step {step['index']}] call {call['id']}: {call['name']}({json.dumps(call['arguments'])})"
                         if "error" not in call else f"[step {step['index']}] malformed call {call['id']}: {call['error']}")
        lines += [f"[step {step['index']}] result {r['id']}: {r['content']}" for r in step["results"]]
    return [*lines, f"answer: {turn['answer']}"]


@pytest.mark.slow  # a real-model tool loop
def test_a_calculator_question_shows_the_call_its_result_and_the_answer_of_bonsai_tools_chat(panel, loaded):
    question, max_tokens = "What is 17 * 23? Use the calculator.", 64  # as tests/runtime/toolcall/test_default_model
    panel.set_settings(tools=["calculator", "clock"], tool_required=True, max_new_tokens=max_tokens)
    turn = panel.send(question, 2400)
    assert turn["mode"] == "tools" and turn["finished"], turn
    assert _as_cli_lines(turn) == _native_tools_chat(question, "calculator,clock", max_tokens), turn
    call = turn["steps"][0]["calls"][0]
    result = turn["steps"][0]["results"][0]
    assert call["name"] == "calculator" and result["ok"] and result["content"] == "391", turn
    assert "391" in turn["answer"], turn
    shown = panel.text("messages")  # every step in the chat: the call, its result, then the answer
    assert f"calculator({json.dumps(call['arguments'], separators=(',', ':'))})\n391" in shown and turn["answer"].strip() in shown, shown


@pytest.mark.slow  # a real-model tool loop
def test_read_page_puts_the_active_tabs_text_in_the_tool_result(panel, loaded):
    panel.set_settings(tools=["read_page"], tool_required=True, max_new_tokens=64)
    turn = panel.send("What does this page say?", 2400)
    result = turn["steps"][0]["results"][0]
    assert turn["steps"][0]["calls"][0]["name"] == "read_page" and result["ok"], turn
    assert result["content"].startswith("Known page (http://127.0.0.1:") and PAGE_TEXT in result["content"], result
    assert PAGE_TEXT in panel.text("messages")  # shown in the chat as the step's result
