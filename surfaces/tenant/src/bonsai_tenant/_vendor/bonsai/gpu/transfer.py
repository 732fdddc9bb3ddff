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

    def write(self, buf: Any, src: Any, offset: int, threads: int) -> None:
        """Bytes of `src` (a uint8 array) into `buf` at `offset`: each chunk is copied into the next mapped
        staging buffer by `threads` threads at once (numpy copies release the GIL), then on the GPU."""
        import numpy as np

        gpu = self.gpu
        for start in range(0, src.nbytes, self.chunk):
            piece = src[start: start + self.chunk]
            stage = self.next()
            dst = np.frombuffer(stage._experimental_get_mapped_range(0, piece.nbytes), np.uint8)
            step = -(-piece.nbytes // threads // 4096) * 4096
            parts = [(dst[i: i + step], piece[i: i + step]) for i in range(0, piece.nbytes, step)]
            if len(parts) > 1 and piece.nbytes >= (1 << 20):
                list(self.pool.map(lambda pr: np.copyto(pr[0], pr[1]), parts))
            else:
                np.copyto(dst, piece)
            del dst, parts
            stage.unmap()
            enc = gpu.device.create_command_encoder()
            enc.copy_buffer_to_buffer(stage, 0, buf, offset + start, piece.nbytes)
            gpu.queue.submit([enc.finish()])
            self.submitted(stage)

