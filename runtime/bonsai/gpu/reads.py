"""Reading GPU buffers back on the native backend: one kept MAP_READ buffer, reads in flight, gathered reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import native_map
from .backend import PendingRead, T, ready_read, round_up
from .recorder import Recorder

READBACK_MAX = 64 << 20  # reads up to this many bytes go through one kept MAP_READ buffer (`Gpu.read`)


class Reads(Recorder):
    """`Gpu`'s reads: `read`, `read_with`, `read_soon`, `read_queued`, `read_gathered` and `wait`."""

    # set by Gpu.__init__
    _wgpu: Any
    device: Any
    queue: Any
    _readback: Any
    _soon_free: dict[int, list[Any]]

    def is_lost(self) -> bool:
        """Whether the device is unusable (`Gpu.is_lost`): a queued read's map polls it while it waits."""
        raise NotImplementedError

    def read(self, buf: Any, nbytes: int | None = None, offset: int = 0) -> bytes:
        """Finish all recorded work and return `nbytes` of `buf` from `offset` (a multiple of 4).

        Reads go through one MAP_READ buffer kept for the device's life (grown to the largest read so
        far, up to READBACK_MAX), not wgpu-py's `queue.read_buffer`, which makes and destroys one per
        read: once host pages (MAP_READ too) fill the allocator's block of that memory, every such
        buffer costs the driver a new block. Measured on the H200: 36-46 ms per round trip instead of
        0.17 ms with 64 MiB of pages (`bench/probes/readback_probe.py`).
        """
        return self.read_with(buf, buf.size - offset if nbytes is None else nbytes, bytes, offset)

    def read_with(self, buf: Any, nbytes: int, use: Callable[[memoryview], T], offset: int = 0) -> T:
        """`use` applied to the mapped readback memory itself (`read`'s round trip, no copy out of it):
        the view is valid only inside the call."""
        self._untaped()
        return self._read_after_recorded(buf, nbytes, offset, use)

    def _read_after_recorded(self, buf: Any, size: int, offset: int, use: Callable[[memoryview], T]) -> T:
        """`use` of `size` bytes of `buf` from `offset`, after everything recorded so far: the copy into the
        readback buffer goes into the open encoder, so the read costs one submit, not two."""
        span = round_up(size, 4)
        if span == 0:
            self.flush()
            return use(memoryview(b""))
        if span > READBACK_MAX:
            self.flush()
            return use(memoryview(self.queue.read_buffer(buf, offset, span))[:size])
        if self._readback.size < span:
            self._readback = self._readback_buffer(1 << (span - 1).bit_length())
        rb = self._readback
        self._copy_out(buf, [(offset, span)], rb)
        rb.map_sync(self._wgpu.MapMode.READ, 0, span)
        try:  # the mapped range itself (read_mapped's own copy, bytes() and a slice would be three)
            return use(rb.read_mapped(0, span, copy=False)[:size])
        finally:
            rb.unmap()

    def read_soon(self, buf: Any, nbytes: int, offset: int = 0) -> PendingRead:
        """Start reading `nbytes` of `buf` from `offset` after everything recorded so far; return at once.

        The copy into a MAP_READ buffer of its own is submitted and the buffer's map requested now, before
        any later submit: wgpu-py's poll thread waits for the newest submission there is when a map is
        requested, so a map asked for after the next block of work was submitted would wait for that block
        too (`bench/probes/map_order_probe.py`; bench/NOTES.md, commit c0f6f87). The GPU runs what is recorded next
        while the read is on its way."""
        self._untaped()
        return self._soon(buf, [(offset, round_up(nbytes, 4))], nbytes)

    def _soon(self, buf: Any, spans: list[tuple[int, int]], nbytes: int) -> PendingRead:
        """`read_soon` of `spans` of `buf` ((byte offset, byte count), counts multiples of 4), their bytes back to
        back, the first `nbytes` of them."""
        span = sum(n for _, n in spans)
        if span > READBACK_MAX:  # no kept buffer that large: read now (later work must not change what is read)
            return ready_read(b"".join(self.read(buf, n, offset) for offset, n in spans)[:nbytes])
        rb, free = self._soon_buffer(span)
        self._copy_out(buf, spans, rb)
        mapped = rb.map_async(self._wgpu.MapMode.READ, 0, span)

        def finish(use: Callable[[memoryview], T]) -> T:
            try:
                mapped.sync_wait()
                return use(rb.read_mapped(0, span, copy=False)[:nbytes])
            finally:
                if rb.map_state == "mapped":
                    rb.unmap()
                free.append(rb)

        return PendingRead(finish)

    def read_queued(self, buf: Any, nbytes: int, offset: int = 0) -> PendingRead:
        """Record copying `nbytes` of `buf` from `offset` into a MAP_READ buffer of its own after everything
        recorded so far, and return at once: the copy goes with the next submit, and the buffer is mapped only
        when `result` asks (`native_map`: no poll thread, so the submits recorded meanwhile are not held back,
        and a copy submitted early maps as soon as it is done). `read_soon` where that cannot be done."""
        self._untaped()
        return self._queued(buf, [(offset, round_up(nbytes, 4))], nbytes)

    def read_gathered(self, buf: Any, spans: list[tuple[int, int]]) -> PendingRead:
        """`read_queued` of several ranges of `buf`, (byte offset, byte count) each, counts multiples of 4: their
        bytes back to back, one copy each into one MAP_READ buffer (a prompt's rows the host drops stay on the
        GPU: `bonsai.kv.staging`)."""
        self._untaped()
        return self._queued(buf, spans, sum(n for _, n in spans))

    def _queued(self, buf: Any, spans: list[tuple[int, int]], nbytes: int) -> PendingRead:
        span = sum(n for _, n in spans)
        if span > READBACK_MAX or not native_map.available():
            return self._soon(buf, spans, nbytes)
        rb, free = self._soon_buffer(span)
        self._end_pass()
        encoder = self._open_encoder()
        self._encode_spans(encoder, buf, spans, rb)

        def finish(use: Callable[[memoryview], T]) -> T:
            if self._encoder is encoder:  # the copy is not submitted yet
                self.flush()
            mapped = native_map.NativeMap(self.device, rb, span)
            try:
                return use(mapped.view(self.is_lost)[:nbytes])
            finally:
                mapped.unmap()
                free.append(rb)

        return PendingRead(finish)

    def _soon_buffer(self, span: int) -> tuple[Any, list[Any]]:
        """A MAP_READ buffer of at least `span` bytes not in use (a power of two, at least 256), and the free list
        of its size, where the caller hands it back: one list per size, so a prompt step's reads ahead take
        theirs without a walk over every buffer kept."""
        size = 1 << (max(span, 256) - 1).bit_length()
        free = self._soon_free.setdefault(size, [])
        return (free.pop() if free else self._readback_buffer(size)), free

    def _copy_out(self, buf: Any, spans: list[tuple[int, int]], rb: Any) -> None:
        """Copy `spans` of `buf` ((byte offset, byte count)) back to back into the MAP_READ buffer `rb` after
        everything recorded so far (in the open encoder: one submit for the work and the copy), and submit."""
        self._end_pass()
        self._encode_spans(self._open_encoder(), buf, spans, rb)
        self.flush()

    def _encode_spans(self, encoder: Any, buf: Any, spans: list[tuple[int, int]], rb: Any) -> None:
        at = 0
        for offset, n in spans:
            self._encode_copy(encoder, buf, offset, rb, at, n)
            at += n

    def _readback_buffer(self, nbytes: int) -> Any:
        U = self._wgpu.BufferUsage
        return self.device.create_buffer(size=nbytes, usage=U.MAP_READ | U.COPY_DST)

    def wait(self) -> None:
        """Block until the queue is idle (wgpu 0.32's on_submitted_work_done_sync is broken)."""
        if not hasattr(self, "_sync_buf"):
            self._sync_buf = self.buffer(16)
        self._read_after_recorded(self._sync_buf, 4, 0, bytes)
