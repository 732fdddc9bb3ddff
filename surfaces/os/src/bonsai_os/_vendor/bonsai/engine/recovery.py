"""Telling a lost GPU device apart from other failures (the backend's `is_lost` probe, and wgpu's log).

Two signals: an exception whose text says the device is lost (or a probe on the device that fails
after any exception), and the `wgpu` logger, where wgpu-py reports errors it does not raise.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import DeviceLostError


def is_device_lost(gpu: Any, exc: BaseException) -> bool:
    """True when `exc` came from a lost device: its text says so, or the backend says the device is lost."""
    if isinstance(exc, DeviceLostError):
        return True
    text = f"{exc} {exc.__cause__ or ''}".lower()
    if "lost" in text or "destroyed" in text:
        return True
    return bool(gpu.is_lost())


class LossWatch(logging.Handler):
    """A handler on the `wgpu` logger that remembers a logged device loss until `check()`."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.message: str | None = None
        logging.getLogger("wgpu").addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "lost" in text.lower():
            self.message = text

    def check(self) -> None:
        """Raise DeviceLostError if wgpu logged a loss since the last check."""
        message, self.message = self.message, None
        if message is not None:
            raise DeviceLostError(f"wgpu reported a lost device: {message.splitlines()[0]}")

    def close(self) -> None:
        logging.getLogger("wgpu").removeHandler(self)
        super().close()
