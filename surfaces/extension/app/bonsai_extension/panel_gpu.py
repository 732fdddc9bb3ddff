"""The browser GPU as the chat panel uses it: reports bytes uploaded and shaders compiled, for its progress bars."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bonsai.gpu.browser import BrowserGpu


class PanelGpu(BrowserGpu):
    """`BrowserGpu` with two optional hooks; a device made by `create()` (also on recovery) has none set."""

    on_upload: Callable[[int], None] | None = None  # bytes of each upload (weights load: `upload`)
    on_compile: Callable[[str], None] | None = None  # the name of each kernel compiled

    def upload(self, data: Any, *, uniform: bool = False) -> Any:
        buf = super().upload(data, uniform=uniform)
        if self.on_upload is not None:
            self.on_upload(memoryview(data).nbytes)
        return buf

    def _compile(self, name: str, code: str, entry: str) -> Any:
        pipeline = super()._compile(name, code, entry)
        if self.on_compile is not None:
            self.on_compile(name)
        return pipeline
