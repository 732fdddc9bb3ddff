"""A user's sequence on a tiny model (and, with -m slow, the default model) in the side panel (headless Chromium), per KV mode: loaded with tools on
(the tool prompt prefilled at load), tools switched off, new chat, a story; its tokens must be what a fresh
native engine generates for the same prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from .panel import Panel

pytestmark = pytest.mark.timeout(1800)

PAGE_HTML = "<!doctype html><title>A page</title><body><p>Some text.</p></body>"
STORY = "Write a long story about a dragon called Ember."
N = 16


@pytest.fixture(scope="module", params=["tiny", pytest.param("default", marks=pytest.mark.slow)])
def model(request, model_server) -> str:
    """The file name of the model under test in the model server's directory: a tiny synthetic one, or the default."""
    from bonsai.models import default_model_path
    from tests.helpers.synthetic import write_tiny_gguf

    root, _ = model_server
    (root / "kv.html").write_text(PAGE_HTML)
    if request.param == "default":
        default = Path(default_model_path())
        if not (root / default.name).exists():
            (root / default.name).symlink_to(default)
        return default.name
    write_tiny_gguf(root / "tiny-kv.gguf", "llama", dim=128, n_heads=2, n_kv_heads=1, head_dim=64, ffn_dim=256,
                    context_length=2048, tied=False)
    return "tiny-kv.gguf"


def _native(gpu, path, kv: str) -> list[int]:
    from bonsai.cli.run import _chat_ids, _stop_ids
    from bonsai.config import ModelConfig
    from bonsai.engine import Engine, Sampling
    from bonsai.gguf import GGUFReader

    reader = GGUFReader(path)
    engine = Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=kv, progress=False, max_positions=2048)
    ids = _chat_ids(engine, [{"role": "user", "content": STORY}])
    return engine.generate(ids, max_tokens=N, sampling=Sampling(), stop_ids=_stop_ids(engine)).tokens


@pytest.mark.parametrize("kv", ["q4res", "f32"])
def test_tools_off_after_a_load_with_tools_gives_the_native_tokens(browser, model, model_server, gpu, kv):
    """With the default model in q4res the new chat's prefix ends inside a K group the tool prompt filled: kept as
    its 4-bit decoding, token 6 was 253 where a fresh engine gives 260 (`Engine.exact_prefix` now refeeds it)."""
    root, base = model_server
    with browser.side_panel(f"{base}/kv.html") as page:
        panel = Panel(page)
        state = panel.settle(300)
        if state["model"] is not None:  # a model stored by an earlier test in this browser
            panel.click("forget-model")
            state = panel.reload(300)
        panel.set_settings(kv=kv, tools=["calculator", "clock", "read_page"], max_new_tokens=N, temperature=0)
        state = panel.load_url(f"{base}/{model}", 1200)
        assert state["phase"] == "ready" and state["model"]["warm_tokens"] > 64, state  # the tool prompt, > a group
        panel.set_settings(tools=[])
        panel.click("new-chat")
        panel.page.wait_for("window.__bonsai.turns.length === 0", 60, "the turns cleared")
        turn = panel.send(STORY, 600)
        assert turn["tokens"] == _native(gpu, root / model, kv), (kv, turn)
