"""What a first-time user meets before any model runs, in a real headless Chromium: no WebGPU, a URL that
cannot be fetched, a known model whose bytes are not the published ones. Each is refused with what to do,
before anything is stored, and without loading a model onto the GPU (cheap on SwiftShader)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cdp import CHROMIUM_FLAGS, Chromium
from .panel import Panel

pytestmark = pytest.mark.timeout(900)

PAGE_HTML = "<!doctype html><title>A page</title><body><p>Some text.</p></body>"


@pytest.fixture(scope="module")
def page_url(model_server) -> str:
    root, base = model_server
    (root / "first-use.html").write_text(PAGE_HTML)
    return f"{base}/first-use.html"


@pytest.fixture(scope="module")
def browser_without_webgpu(chromium_binary, extension_dir: Path, tmp_path_factory):
    """Chromium as most Linux installs start: WebGPU is exposed but gives no adapter without the flag."""
    flags = tuple(f for f in CHROMIUM_FLAGS if f != "--enable-unsafe-webgpu")
    chromium = Chromium(chromium_binary, extension_dir, tmp_path_factory.mktemp("no-webgpu") / "profile", flags=flags)
    yield chromium
    chromium.close()


def test_without_webgpu_the_panel_says_how_to_turn_it_on_before_asking_for_a_model(browser_without_webgpu, page_url):
    with browser_without_webgpu.side_panel(page_url) as page:
        panel = Panel(page)
        state = panel.settle(300)
        assert state["phase"] == "error" and state["model"] is None, state
        error = state["errors"][0]
        assert error["where"] == "WebGPU" and error["type"] == "NoWebGpu", state["errors"]
        assert "chrome://flags/#enable-unsafe-webgpu" in error["message"] and "113" in error["message"], error
        shown = panel.text("error")
        assert "WebGPU: NoWebGpu" in shown and "chrome://flags/#enable-unsafe-webgpu" in shown, shown
        assert "Bonsai needs WebGPU" in panel.text("status")
        # nothing asked of the user that cannot work: no model chooser, and Python was not even started
        assert page.evaluate("document.getElementById('chooser').hidden") is True
        assert "boot" not in state["progress"], state["progress"]


@pytest.fixture(scope="module")
def no_cors_server(tmp_path_factory):
    """A server that serves files but no CORS header: the extension's fetch of it is refused."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    root = tmp_path_factory.mktemp("no-cors")
    (root / "model.gguf").write_bytes(b"GGUF")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def panel(browser, page_url):
    """The side panel (WebGPU on), waiting for a model to be chosen."""
    with browser.side_panel(page_url) as page:
        panel = Panel(page)
        state = panel.settle(300)
        if state["model"] is not None:  # a model stored by an earlier test in this (session-wide) browser
            panel.click("forget-model")
            state = panel.reload(300)
        assert state["phase"] == "choose-model", state
        yield panel


def test_a_url_the_browser_may_not_read_is_named_with_a_cors_hint(panel, no_cors_server):
    url = f"{no_cors_server}/model.gguf"
    state = panel.load_url(url, 120)
    error = state["errors"][-1]
    assert state["phase"] == "choose-model" and state["model"] is None, state
    assert error["type"] == "ModelUrlError" and url in error["message"], error
    assert "Access-Control-Allow-Origin" in error["message"] and "CORS" in error["message"], error
    assert url in panel.text("error") and panel.opfs_files() == []


def test_a_url_the_browser_cannot_fetch_is_named(panel):
    state = panel.load_url("htp:/nowhere", 120)  # a valid URL (the field accepts it) of a scheme fetch refuses
    error = state["errors"][-1]
    assert state["phase"] == "choose-model" and error["type"] == "ModelUrlError", state
    assert "htp:/nowhere" in error["message"], error


def test_the_default_model_with_damaged_bytes_is_refused_by_its_published_sha256(panel, model_server):
    from bonsai.models import DEFAULT_MODEL, default_model_path

    root, base = model_server
    data = bytearray(Path(default_model_path()).read_bytes())
    middle = len(data) // 2  # inside the weights: the header still parses, the answers would be garbage
    data[middle : middle + 4096] = bytes(b ^ 0xFF for b in data[middle : middle + 4096])
    (root / "damaged").mkdir(exist_ok=True)
    (root / "damaged" / DEFAULT_MODEL.file).write_bytes(bytes(data))
    state = panel.load_url(f"{base}/damaged/{DEFAULT_MODEL.file}", 300)
    error = state["errors"][-1]
    assert state["phase"] == "choose-model" and state["model"] is None, state
    assert error["type"] == "ModelChecksumError" and error["field"] == "sha256", error
    assert error["path"] == DEFAULT_MODEL.file and DEFAULT_MODEL.sha256 in error["message"], error
    assert "ModelChecksumError" in panel.text("error") and panel.opfs_files() == []


def test_only_a_file_named_as_a_known_model_is_held_to_a_hash(monkeypatch):
    """The check itself: the published hash passes, another fails, an unknown name is not checked."""
    from bonsai.models import DEFAULT_MODEL

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "surfaces" / "extension" / "app"))
    from bonsai_extension.loader import ModelChecksumError, check_known

    check_known(DEFAULT_MODEL.file, DEFAULT_MODEL.sha256.upper())
    check_known("my-own-model.gguf", "0" * 64)
    with pytest.raises(ModelChecksumError, match=DEFAULT_MODEL.file):
        check_known(DEFAULT_MODEL.file, "0" * 64)
