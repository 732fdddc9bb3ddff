"""The panel page's hooks as Python calls: events out as JSON, the stop button, a breath for the browser, the active tab."""

from __future__ import annotations

import json
import time
from typing import Any

from bonsai.toolcall.errors import ToolExecutionError


class Bridge:
    """`hooks` is the JS object panel.js binds: onEvent(kind, json), stopRequested(), breathe() -> Promise,
    readActiveTab() -> Promise of JSON {url, title, text}. Python runs inside runPythonAsync, so it can
    suspend on those promises with `run_sync` (JSPI) while the page paints and takes clicks."""

    def __init__(self, hooks: Any, run_sync: Any, interval: float = 0.1) -> None:
        self.hooks, self.run_sync, self.interval = hooks, run_sync, interval
        self._last = 0.0

    def emit(self, kind: str, data: dict) -> None:
        self.hooks.onEvent(kind, json.dumps(data))

    def progress(self, phase: str, fraction: float, detail: str) -> None:
        """A progress event, then (at most every `interval` s) a pause so the page can show it."""
        self.emit("progress", {"phase": phase, "fraction": fraction, "detail": detail})
        now = time.perf_counter()
        if now - self._last >= self.interval or fraction >= 1.0:
            self._last = now
            self.run_sync(self.hooks.breathe())

    def should_stop(self) -> bool:
        return bool(self.hooks.stopRequested())

    def read_tab(self) -> dict:
        """The active tab's {url, title, text}; the page's refusal (no access, no page) as a tool error."""
        try:
            return json.loads(self.run_sync(self.hooks.readActiveTab()))
        except Exception as exc:  # a JsException carrying the page's Error
            message = getattr(getattr(exc, "js_error", None), "message", None) or str(exc)
            raise ToolExecutionError(str(message)) from None
