"""MAP_READ buffers mapped straight through wgpu-native and polled without blocking, apart from wgpu-py's poll thread.

wgpu-py's `map_async` wakes its poll thread, which waits in wgpuDevicePoll for the newest submission there is;
while it waits, a submit from the thread recording the next work waits with it. Reading a prompt step's first
layers' rows ahead through `Gpu.read_soon` (a map requested between its submits) made the 512-token step 11-12%
slower on the H100 (bench/NOTES.md, commit 191e4e0): the recording could no longer run ahead of the GPU. A map made
here is requested only when its bytes are wanted, after the recording, and polled from the asking thread
without waiting in the driver, so it resolves as soon as its own copy's submission is done, not the step's last.
`available()` is False where wgpu-py's private cffi handle is not there (another wgpu-py version): callers
then use `read_soon`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from typing import Any

NEEDED = ("wgpuBufferMapAsync", "wgpuBufferGetConstMappedRange", "wgpuBufferUnmap", "wgpuDevicePoll")
POLL_PAUSE_S = 20e-6  # between non-blocking polls: lets a CPU adapter's own threads run
LOST_CHECK_S = 0.5  # a map still pending this long: ask whether the device is lost (its callback may never come)
# Maps whose callback has not run yet: kept alive here, since wgpu-native may still call it (with an error) when the
# buffer or a lost device is dropped after `view` gave up waiting; cffi must not have freed it by then.
_PENDING: set[NativeMap] = set()


@cache
def _native_lib() -> tuple[Any, Any] | None:
    try:
        from wgpu.backends.wgpu_native._ffi import ffi, lib
    except ImportError:
        return None
    return (ffi, lib) if all(hasattr(lib, name) for name in NEEDED) else None


def available() -> bool:
    """Whether maps can be made here (wgpu-native's calls reachable)."""
    return _native_lib() is not None


class NativeMap:
    """A read map of the first `size` bytes of wgpu-py buffer `buffer` (MAP_READ) on `device`, requested now."""

    def __init__(self, device: Any, buffer: Any, size: int) -> None:
        native = _native_lib()
        assert native is not None, "native_map.available() is False"
        ffi, lib = native
        self._ffi, self._lib, self._device, self._buffer, self.size = ffi, lib, device._internal, buffer._internal, size
        self._status: list[tuple[int, str]] = []

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def mapped(status: int, message: Any, _u1: Any, _u2: Any) -> None:
            text = ffi.string(message.data, message.length).decode(errors="replace") if message.data else ""
            self._status.append((status, text))
            _PENDING.discard(self)

        self._callback = mapped  # alive until it has fired (`_PENDING`)
        _PENDING.add(self)
        info = ffi.new("WGPUBufferMapCallbackInfo *", {"mode": lib.WGPUCallbackMode_AllowProcessEvents,
                                                        "callback": mapped})
        lib.wgpuBufferMapAsync(self._buffer, lib.WGPUMapMode_Read, 0, size, info[0])
        self._mapped = False

    def view(self, lost: Callable[[], bool]) -> memoryview:
        """The mapped bytes (read-only, valid until `unmap`), once the copy before the map is done; raises
        RuntimeError where `lost()` says the device is gone before that."""
        lib, null = self._lib, self._ffi.NULL
        check = time.perf_counter() + LOST_CHECK_S
        while not self._status:
            lib.wgpuDevicePoll(self._device, False, null)
            if self._status:
                break
            time.sleep(POLL_PAUSE_S)
            if time.perf_counter() > check:
                if lost():
                    raise RuntimeError("Could not map buffer: the device is lost")
                check = time.perf_counter() + LOST_CHECK_S
        status, text = self._status[0]
        if status != lib.WGPUMapAsyncStatus_Success:
            raise RuntimeError(f"Could not map buffer ({status} : {text}).")
        self._mapped = True
        ptr = lib.wgpuBufferGetConstMappedRange(self._buffer, 0, self.size)
        return memoryview(self._ffi.buffer(ptr, self.size)).toreadonly()

    def unmap(self) -> None:
        """Unmap (after `view`'s bytes are used; a map that failed or was never waited for is left as it is)."""
        if self._mapped:
            self._lib.wgpuBufferUnmap(self._buffer)
            self._mapped = False
