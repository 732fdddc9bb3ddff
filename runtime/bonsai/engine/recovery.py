"""Telling a lost GPU device apart from other failures (wgpu-py 0.32 has no `device.lost`)."""

from __future__ import annotations

from typing import Any


def is_device_lost(gpu: Any, exc: BaseException) -> bool:
    """True when `exc` came from a lost device: its text says so, or a fresh probe on the device fails."""
    text = f"{exc} {exc.__cause__ or ''}".lower()
    if "lost" in text or "destroyed" in text:
        return True
    try:  # probe: creating a buffer fails with "Parent device is lost" on a dead device
        gpu.device.create_buffer(size=16, usage=gpu._wgpu.BufferUsage.STORAGE)
    except Exception:  # noqa: BLE001 - any failure of the probe means the device is unusable
        return True
    return False
