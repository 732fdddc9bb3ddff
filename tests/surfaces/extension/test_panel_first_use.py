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
