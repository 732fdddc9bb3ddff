"""A small Chrome DevTools Protocol client: headless Chromium with one unpacked extension, one page.

Everything has a deadline: a page that never sets `window.__result` fails with its status line, its
console and its exceptions in the message instead of hanging the test run.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--enable-unsafe-webgpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--remote-debugging-port=0",
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def extension_id(manifest: Path) -> str:
    """The ID Chromium gives an extension whose manifest carries `key` (sha256 of the key, a-p)."""
    key = base64.b64decode(json.loads(manifest.read_text())["key"])
    return "".join(chr(ord("a") + int(c, 16)) for c in hashlib.sha256(key).hexdigest()[:32])


class PageTimeout(AssertionError):
    """The page did not report a result in time; the message holds what it showed and logged."""


class Chromium:
    """One headless Chromium process with `extension_dir` loaded; `close()` ends it."""

    def __init__(self, binary: str, extension_dir: Path, profile_dir: Path, start_timeout: float = 60,
                 flags: tuple[str, ...] = CHROMIUM_FLAGS) -> None:
        self.extension_dir = extension_dir
        self.id = extension_id(extension_dir / "manifest.json")
        self.log_path = profile_dir.parent / "chromium.log"
        args = [binary, *flags, f"--user-data-dir={profile_dir}",
                f"--load-extension={extension_dir}", f"--disable-extensions-except={extension_dir}", "about:blank"]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        port_file = profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + start_timeout
        while not port_file.is_file() or not port_file.read_text().strip():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"Chromium did not start; its log:\n{self.log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
        self.port = int(port_file.read_text().split()[0])

    def open(self, path: str, timeout: float = 60) -> dict:
        """Open chrome-extension://ID/`path`, wait for `window.__result`, close the tab, return it."""
        with self.tab(path) as page:
            return page.wait_for_result(timeout)

    @contextlib.contextmanager
    def tab(self, path: str) -> Iterator[Page]:
        """A new tab on chrome-extension://ID/`path`, closed on exit."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as response:
            target = json.load(response)
        try:
            with Page(target["webSocketDebuggerUrl"]) as page:
                page.navigate(f"chrome-extension://{self.id}/{path}")
                yield page
        finally:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/close/{target['id']}", timeout=10).close()

    def browser_call(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        """One DevTools call on the browser target (Target.*, Extensions.*)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/version", timeout=10) as response:
            url = json.load(response)["webSocketDebuggerUrl"]
        with connect(url, max_size=None, open_timeout=10) as ws:
            ws.send(json.dumps({"id": 1, "method": method, "params": params or {}}))
            deadline = time.monotonic() + timeout
            while True:
                message = json.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
                if message.get("id") == 1:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message.get("result", {})

    def targets(self) -> list[dict]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as response:
            return json.load(response)

    def open_loaded_tab(self, page_url: str, timeout: float = 30) -> tuple[dict, str]:
        """A new (active) tab on `page_url`, once its page has loaded: its DevTools target and its tab target
        id. A toolbar click before the page commits is granted to the document the navigation then replaces
        (seen under load), so a click waits for this."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?{page_url}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as response:
            page_target = json.load(response)
        deadline = time.monotonic() + timeout
        while True:  # the tab target appears once the page has committed
            tabs = self.browser_call("Target.getTargets", {"filter": [{"type": "tab"}]})["targetInfos"]
            tab = next((t for t in tabs if t["url"] == page_url), None)
            if tab is not None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if tab is None:
            raise RuntimeError(f"no tab target for {page_url}")
        with Page(page_target["webSocketDebuggerUrl"]) as opened:
            opened.wait_for(f"location.href === {json.dumps(page_url)} && document.readyState === 'complete'",
                            max(1.0, deadline - time.monotonic()), f"{page_url} loaded")
        return page_target, tab["targetId"]

    def click_toolbar_button(self, tab_id: str) -> None:
        """The extension's toolbar button clicked on tab `tab_id`, as a person does."""
        self.browser_call("Extensions.triggerAction", {"id": self.id, "targetId": tab_id})

    def close_tab(self, page_target: dict) -> None:
        urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/close/{page_target['id']}", timeout=10).close()

    @contextlib.contextmanager
    def side_panel(self, page_url: str, timeout: float = 30) -> Iterator[Page]:
        """Open `page_url` in a new tab and click the extension's toolbar button on it, as a person does:
        the window's side panel opens, or stays open (and the extension may read that tab: activeTab).
        Yields the panel's page; closes the tab on exit (the panel stays, as in the browser)."""
        deadline = time.monotonic() + timeout
        page_target, tab_id = self.open_loaded_tab(page_url, timeout)
        panel_url = f"chrome-extension://{self.id}/panel.html"
        try:
            clicked: float | None = None  # clicked at least once, even where the panel is already open (a
            # an earlier test of the run left it open): the click is what lets the extension read this tab
            while (panel := next((t for t in self.targets() if t["url"] == panel_url), None)) is None or clicked is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("the toolbar button opened no side panel")
                if clicked is None or time.monotonic() - clicked > 3:  # a click while the worker or the tab is still starting is lost
                    self.click_toolbar_button(tab_id)
                    clicked = time.monotonic()
                time.sleep(0.2)
            with Page(panel["webSocketDebuggerUrl"]) as page:
                yield page
        finally:
            self.close_tab(page_target)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


class Page:
    """One tab over its DevTools websocket: navigate, evaluate, and the console it logged."""

    def __init__(self, ws_url: str) -> None:
        self._connection = connect(ws_url, max_size=None, open_timeout=10)
        self.console: list[str] = []
        self._next = 0

    def __enter__(self) -> Page:
        self.ws = self._connection.__enter__()
        self.call("Runtime.enable")
        self.call("Log.enable")
        return self

    def __exit__(self, *exc: object) -> None:
        self._connection.__exit__(*exc)

    def call(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        self._next += 1
        my_id = self._next
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if message.get("id") == my_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.console.append(f"console.{params.get('type')}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text")
            self.console.append(f"exception: {text}")
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            self.console.append(f"log.{entry.get('level')}: {entry.get('text')} {entry.get('url', '')}".rstrip())

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def pick_file(self, selector: str, path: Path) -> None:
        """Choose `path` in the page's file input `selector`, as a person would (fires "change")."""
        self.evaluate("delete window.__result")
        root = self.call("DOM.getDocument")["root"]["nodeId"]
        node = self.call("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        self.call("DOM.setFileInputFiles", {"nodeId": node, "files": [str(path)]})

    def evaluate(self, expression: str, *, await_promise: bool = False, user_gesture: bool = False) -> Any:
        """The value of a JS expression (`await_promise`: of the promise it returns); a thrown error raises."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise, "userGesture": user_gesture})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(details.get("exception", {}).get("description") or details.get("text"))
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float, what: str = "") -> Any:
        """Poll a JS expression until it is truthy; its value. On timeout raise PageTimeout with the page."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except (RuntimeError, TimeoutError):  # between execution contexts, or busy (Pyodide starting)
                value = None
            if value:
                return value
            time.sleep(0.25)
        try:
            shown = self.evaluate("document.body && document.body.innerText")
        except RuntimeError as exc:
            shown = f"(unreadable: {exc})"
        console = "\n".join(self.console[-40:])
        raise PageTimeout(f"{what or expression} not true after {timeout:.0f} s; page text:\n{shown}\nconsole:\n{console}")

    def reload(self) -> None:
        self.console.clear()
        self.call("Page.reload", {"ignoreCache": True})

    def wait_for_result(self, timeout: float) -> dict:
        """Poll `window.__result` until it is set; on timeout raise PageTimeout with what the page showed."""
        value = self.wait_for("window.__result === undefined ? null : JSON.stringify(window.__result)", timeout,
                              "window.__result")
        result = json.loads(value)
        result["page_text"] = self.evaluate("document.body.innerText")
        result["console"] = self.console
        return result
