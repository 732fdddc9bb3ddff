"""The GPU seam's verbs behave the same on every backend: write/read offsets, padding, copy, ordering, errors.

Runs on the native `Gpu` (tests) and on `BrowserGpu` (the page), so the two implementations are held
to one contract: the one the engine is written against.
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

from bonsai.errors import ShaderError

PACKAGE = "bonsai_extension"


def _outcome(fn: Any) -> dict:
    try:
        return {"ok": bool(fn())}
    except Exception as exc:  # noqa: BLE001 - a verb that raises fails its item, named
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _write_read_offsets(gpu: Any) -> bool:
    buf = gpu.buffer(64)
    gpu.write(buf, bytes(range(1, 17)), offset=16)
    return gpu.read(buf, 16, offset=16) == bytes(range(1, 17)) and gpu.read(buf, 16) == bytes(16)


def _odd_sizes_are_padded(gpu: Any) -> bool:
    buf = gpu.upload(b"abcde")
    return gpu.read(buf, 5) == b"abcde" and gpu.read(buf) == b"abcde" + bytes(11)


def _copy(gpu: Any) -> bool:
    src, dst = gpu.upload(bytes(range(32))), gpu.buffer(48)
    gpu.copy(src, 4, dst, 8, 16)
    return gpu.read(dst, 16, offset=8) == bytes(range(4, 20)) and gpu.read(dst, 8) == bytes(8)


def _gathered_read(gpu: Any) -> bool:
    """`read_gathered`: ranges of a buffer back to back (a q4res prompt's rows the host keeps), as recorded."""
    buf = gpu.upload(bytes(range(64)))
    pending = gpu.read_gathered(buf, [(4, 8), (32, 12), (60, 4)])
    gpu.write(buf, bytes(64))
    return pending.result(bytes) == bytes(range(4, 12)) + bytes(range(32, 44)) + bytes(range(60, 64))


def _dispatch_ordering(gpu: Any) -> bool:
    """A write between two dispatches lands after the first and before the second, as recorded."""
    n = 100
    kernel = gpu.kernel(PACKAGE, "verbs.wgsl", WG=64)
    uni = gpu.upload(struct.pack("<4I", 7, n, 0, 0), uniform=True)
    inp, out1, out2 = gpu.upload(array("I", range(n))), gpu.buffer(4 * n), gpu.buffer(4 * n)
    gpu.dispatch(kernel, [uni, inp, out1], (n + 63) // 64)
    gpu.write(inp, array("I", [3] * n))
    gpu.dispatch(kernel, [uni, inp, out2], (n + 63) // 64)
    first, second = array("I", gpu.read(out1)), array("I", gpu.read(out2))
    return list(first) == [2 * i + 7 for i in range(n)] and list(second) == [13] * n


def _wait_and_count(gpu: Any) -> bool:
    before = gpu.dispatch_count
    kernel = gpu.kernel(PACKAGE, "verbs.wgsl", WG=64)
    uni = gpu.upload(struct.pack("<4I", 1, 4, 0, 0), uniform=True)
    inp, out = gpu.upload(array("I", [5, 6, 7, 8])), gpu.buffer(16)
    gpu.dispatch(kernel, [uni, inp, out], 1)
    gpu.wait()
    return gpu.dispatch_count == before + 1 and list(array("I", gpu.read(out))) == [11, 13, 15, 17]


def _shader_errors_name_the_file(gpu: Any) -> bool:
    for make in (lambda: gpu.kernel(PACKAGE, "verbs_broken.wgsl"), lambda: gpu.kernel(PACKAGE, "verbs.wgsl")):
        try:
            make()
        except ShaderError as exc:
            if "verbs" not in str(exc):
                return False
        else:
            return False
    return _write_read_offsets(gpu)  # the failed compiles left no error behind for later work


def _invalid_work_raises_then_the_device_carries_on(gpu: Any) -> bool:
    """Binding a storage buffer where the kernel wants a uniform must raise (natively at once; in the
    browser by the next read, as GpuValidationError), and later valid work must still succeed."""
    kernel = gpu.kernel(PACKAGE, "verbs.wgsl", WG=64)
    wrong, out = gpu.buffer(16), gpu.buffer(16)
    try:
        gpu.dispatch(kernel, [wrong, wrong, out], 1)
        gpu.read(out)
    except Exception:  # noqa: BLE001 - wgpu's and WebGPU's error types differ; raising is the contract
        return _write_read_offsets(gpu)
    return False


CHECKS = {
    "write_read_offsets": _write_read_offsets,
    "odd_sizes_are_padded": _odd_sizes_are_padded,
    "copy": _copy,
    "gathered_read": _gathered_read,
    "dispatch_ordering": _dispatch_ordering,
    "wait_and_count": _wait_and_count,
    "shader_errors_name_the_file": _shader_errors_name_the_file,
    "invalid_work_raises_then_the_device_carries_on": _invalid_work_raises_then_the_device_carries_on,
}


def run(gpu: Any) -> dict:
    """Every verb item; ok when all hold."""
    items = {name: _outcome(lambda fn=fn: fn(gpu)) for name, fn in CHECKS.items()}
    return {"ok": all(item["ok"] for item in items.values()), "items": items, "backend": type(gpu).__name__}
