"""Pyodide's bridge to the page's WebGPU: the FFI (imported only in a browser), the limits a device asks
for, JS null and error messages, and the adapter's info under wgpu-py's keys."""

from __future__ import annotations

from typing import Any

from ..errors import GpuUnavailableError

# Limits raised from the WebGPU minimums to what the adapter offers (the defaults are tiny).
WANTED_LIMITS = (
    "maxStorageBufferBindingSize",
    "maxBufferSize",
    "maxStorageBuffersPerShaderStage",
    "maxComputeWorkgroupStorageSize",
    "maxComputeInvocationsPerWorkgroup",
    "maxComputeWorkgroupSizeX",
    "maxComputeWorkgroupsPerDimension",
    "maxTextureDimension2D",
)


def ffi() -> tuple[Any, Any, Any, Any]:
    """(js, run_sync, to_js, create_proxy): Pyodide's bridge, imported only inside a browser."""
    try:
        import js
        from pyodide.ffi import create_proxy, run_sync, to_js
    except ImportError as exc:
        raise GpuUnavailableError("BrowserGpu runs only inside Pyodide; natively use bonsai.gpu.Gpu") from exc
    return js, run_sync, to_js, create_proxy


class Adapter:
    """The JS GPUAdapter, with `info` as a dict of wgpu-py's keys: code written against the native
    seam (e.g. `gpu.adapter.info["adapter_type"]`) reads both backends alike; `js` is the adapter."""

    def __init__(self, js_adapter: Any) -> None:
        self.js = js_adapter

    @property
    def info(self) -> dict[str, str]:
        raw = self.js.info
        fields = {key: str(getattr(raw, key, "") or "") for key in ("vendor", "architecture", "device", "description")}
        software = bool(getattr(raw, "isFallbackAdapter", False)) or fields["architecture"] == "swiftshader"
        return {**fields, "adapter_type": "CPU" if software else "Unknown", "backend_type": "WebGPU"}

    @property
    def limits(self) -> Any:
        return self.js.limits


def is_null(value: Any) -> bool:
    """JS null/undefined as Pyodide hands it over: None, or `pyodide.ffi.jsnull` in Pyodide >= 0.27."""
    return value is None or type(value).__name__ == "JsNull"


def js_message(exc: BaseException) -> str:
    """The message of a JS error carried by a JsException (its `.message`), else str(exc)."""
    js_error = getattr(exc, "js_error", None)
    message = getattr(js_error, "message", None)
    return str(message) if message else str(exc)
