"""Drive the chat side panel as a person does (its fields and buttons, over the DevTools protocol), read `window.__bonsai`."""

from __future__ import annotations

import json
from typing import Any

from .cdp import Page

SETTLED = ("choose-model", "ready", "error")


class Panel:
    """The side panel's page: wait for phases, choose a model by URL, change settings, send, stop, reload."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def state(self) -> dict:
        return json.loads(self.page.evaluate("JSON.stringify(window.__bonsai)") or "null")

    def settle(self, timeout: float) -> dict:
        """Wait until the panel waits for the user (a model to choose, a message, or an error shown)."""
        phases = json.dumps(list(SETTLED))
        self.page.wait_for(f"window.__bonsai && {phases}.includes(window.__bonsai.phase)", timeout,
                           f"the panel settling in one of {SETTLED}")
        return self.state()

    def load_url(self, url: str, timeout: float) -> dict:
        """Type `url` into "load it from a URL" and submit; wait for the model to be ready (or a refusal shown)."""
        errors = len(self.state()["errors"])
        self.page.evaluate(f"document.getElementById('model-url').value = {json.dumps(url)};"
                           "document.getElementById('url-form').requestSubmit()")
        self.page.wait_for(f"window.__bonsai.phase !== 'choose-model' || window.__bonsai.errors.length > {errors}",
                           30, "the panel taking the URL")
        return self.settle(timeout)

    def set_settings(self, *, kv: str | None = None, max_new_tokens: int | None = None,
                     temperature: float | None = None, tools: list[str] | None = None,
                     tool_required: bool | None = None) -> None:
        """Fill the settings form and fire its change event (the panel saves them in chrome.storage)."""
        parts = []
        if kv is not None:
            parts.append(f"f.elements.kv.value = {json.dumps(kv)};")
        if max_new_tokens is not None:
            parts.append(f"f.elements.maxNewTokens.value = {max_new_tokens};")
        if temperature is not None:
            parts.append(f"f.elements.temperature.value = {temperature};")
        if tools is not None:
            parts.append(f"for (const b of f.querySelectorAll('input[name=tools]')) b.checked = "
                         f"{json.dumps(tools)}.includes(b.value);")
        if tool_required is not None:
            parts.append(f"f.elements.toolRequired.checked = {json.dumps(tool_required)};")
        self.page.evaluate("(() => { const f = document.getElementById('settings-form');" + "".join(parts)
                           + "f.dispatchEvent(new Event('change')); })()")

    def stored_settings(self) -> dict:
        return json.loads(self.page.evaluate("chrome.storage.local.get('settings').then(s => JSON.stringify(s.settings))",
                                             await_promise=True))

    def send(self, text: str, timeout: float) -> dict:
        """Type `text`, press Enter, wait for the reply to finish; the turn as the panel recorded it."""
        before = self.state()
        turns, errors = len(before["turns"]), len(before["errors"])
        self.page.evaluate(f"(() => {{ const p = document.getElementById('prompt'); p.value = {json.dumps(text)};"
                           "p.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); })()")
        self.page.wait_for(f"window.__bonsai.turns.length > {turns} || window.__bonsai.phase === 'error' "
                           f"|| window.__bonsai.errors.length > {errors}", timeout, f"a reply to {text!r}")
        state = self.state()
        assert not state["errors"][errors:], state["errors"][errors:]
        return state["turns"][-1]

    def click(self, element_id: str) -> None:
        self.page.evaluate(f"document.getElementById({json.dumps(element_id)}).click()")

    def text(self, element_id: str) -> str:
        return self.page.evaluate(f"document.getElementById({json.dumps(element_id)}).innerText")

    def opfs_files(self) -> list[str]:
        """The names in the panel's OPFS models directory (the extension's origin)."""
        return json.loads(self.page.evaluate(
            "(async () => { const d = await (await navigator.storage.getDirectory())"
            ".getDirectoryHandle('models', {create: true}); const n = []; for await (const k of d.keys()) n.push(k);"
            "return JSON.stringify(n.sort()); })()", await_promise=True))

    def reload(self, timeout: float) -> dict:
        self.page.reload()
        self.page.wait_for("window.__bonsai && window.__bonsai.phase", 60, "the panel restarting")
        return self.settle(timeout)

    def evaluate(self, expression: str, **options: Any) -> Any:
        return self.page.evaluate(expression, **options)
