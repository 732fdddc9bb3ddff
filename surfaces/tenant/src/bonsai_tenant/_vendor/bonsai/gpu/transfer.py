"""Native host<->GPU transfer helpers: host pages the GPU copies from, and a ring of mapped staging buffers."""

from __future__ import annotations

from typing import Any


class HostPage:
    """A host-RAM buffer the GPU copies from (`Gpu.host_page`); unmapped except while being filled."""

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.encoder: Any = None  # the command encoder that last recorded a copy from this page


class StagingRing:
    """MAP_WRITE staging buffers used in turn; one is re-mapped (waiting for its last copy) when reused."""

    def __init__(self, gpu: Any, count: int = 4, chunk: int = 16 << 20, threads: int = 8) -> None:
        from concurrent.futures import ThreadPoolExecutor

        U = gpu._wgpu.BufferUsage
        self.gpu, self.chunk = gpu, chunk
        self.bufs = [gpu.device.create_buffer(size=chunk, usage=U.MAP_WRITE | U.COPY_SRC, mapped_at_creation=True)
                     for _ in range(count)]
        self.mapped = [True] * count
        self.i = 0
        self.pool = ThreadPoolExecutor(max_workers=threads)

    def next(self) -> Any:
        j = self.i
        self.i = (self.i + 1) % len(self.bufs)
        if not self.mapped[j]:
            self.bufs[j].map_sync(self.gpu._wgpu.MapMode.WRITE)  # waits for the copy that last read it
            self.mapped[j] = True
        return self.bufs[j]

    def submitted(self, buf: Any) -> None:
        self.mapped[self.bufs.index(buf)] = False

