"""The native GPU backend: one wgpu-py device, compiled kernels, buffers, and batched dispatches.

`Gpu` is the seam the rest of the runtime talks to. Everything above it uses only these verbs:
`buffer`, `upload`, `write`, `read`, `kernel`, `dispatch`, `flush`. A browser backend (Pyodide +
`navigator.gpu`) can implement the same verbs; nothing above this module imports wgpu.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ..errors import GpuUnavailableError, ShaderError
from . import pass_ops
from .backend import (
    TEXTURE_ROW_BYTES,
    TEXTURE_ROW_WORDS,
    Kernel,
    WordTexture,
    round_up,
)
from .limits import native_limits
from .reads import READBACK_MAX, Reads  # noqa: F401 - READBACK_MAX: part of this module's API
from .transfer import HostPage, StagingRing

__all__ = ["Gpu", "HostPage", "Kernel"]


HOST_PAGE_FEATURE = "mappable-primary-buffers"


def _quiet_host_page_feature(record: logging.LogRecord) -> bool:
    """wgpu warns that this feature is a "performance footgun" on discrete GPUs (for buffers used in
    shaders); host pages are only ever copy sources, which is what the feature is for here."""
    return "MAPPABLE_PRIMARY_BUFFERS enabled on a discrete gpu" not in record.getMessage()


def _quiet_vulkan() -> None:
    """Vulkan loaders complain without XDG_RUNTIME_DIR; give them a private writable one."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        path = os.path.join("/tmp", f"bonsai-xdg-{os.getuid()}")
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = path


class Gpu(Reads):
    """One wgpu device plus the caches that make repeated work cheap.

    Dispatches are recorded into one open compute pass (`Recorder`) and submitted by `flush` (or
    implicitly by `write`/`read`, which must see every earlier dispatch finished or ordered before them).
    """

    def __init__(self, device: Any, adapter: Any) -> None:
        import wgpu

        super().__init__()
        self._wgpu = wgpu
        self.device = device
        self.adapter = adapter
        self.queue = device.queue
        self.limits = native_limits(device.limits)
        self.direct_pass_calls = True  # dispatches through pass_ops.direct_ops (False: wgpu-py's methods)
        self.native_replay = True  # taped runs through pass_ops.replay_native (False: the pass's calls one by one)
        # made before any host page, so a page never leaves it without room in mappable memory
        self._readback = self._readback_buffer(64 << 10)
        self._soon_free: dict[int, list[Any]] = {}  # MAP_READ buffers of `read_soon`/`read_queued` not in use, by size
        self.reads_in_flight = True  # read_soon maps its own buffer while later work runs

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def create(cls, power_preference: str = "high-performance", extra_features: tuple[str, ...] = ()) -> Gpu:
        """Open the best adapter available (a real GPU, else lavapipe) and a device on it (with
        `extra_features` too, where the adapter has them: a benchmark's timestamp queries, say)."""
        _quiet_vulkan()
        try:
            import wgpu
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise GpuUnavailableError("wgpu is not installed: pip install 'bonsai[runtime]'") from exc
        cause: Exception | None = None
        try:
            adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        except Exception as exc:  # wgpu raises plain RuntimeError when no adapter exists
            adapter, cause = None, exc
        if adapter is None:
            why = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
            raise GpuUnavailableError(
                f"no GPU adapter found{why}; on a machine without a GPU install lavapipe "
                "(apt-get install mesa-vulkan-drivers libvulkan1)"
            ) from cause
        limits = adapter.limits
        wanted = ("max-storage-buffer-binding-size", "max-buffer-size", "max-storage-buffers-per-shader-stage",
                  "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
                  "max-compute-workgroup-size-x", "max-compute-workgroups-per-dimension", "max-texture-dimension-2d")
        # host pages (`host_page`) are MAP_READ buffers the GPU copies from: a native wgpu feature
        features = [f for f in (HOST_PAGE_FEATURE, *extra_features) if f in adapter.features]
        logging.getLogger("wgpu").addFilter(_quiet_host_page_feature)
        device = adapter.request_device_sync(required_features=features,
                                             required_limits={k: limits[k] for k in wanted if k in limits})
        return cls(device, adapter)

    @property
    def description(self) -> str:
        info = self.adapter.info
        return f"{info['device']} ({info['backend_type']}, {info['adapter_type']})"

    # ---- buffers ------------------------------------------------------------------------
    def upload(self, data: Any, *, uniform: bool = False) -> Any:
        """A new buffer holding `data` (bytes, memoryview or a numpy array).

        No flush: no dispatch recorded so far can use a buffer that did not exist, and the queue
        write lands before the open encoder's work is submitted, so recording is not split.
        """
        view = memoryview(data).cast("B")
        buf = self.buffer(view.nbytes, uniform=uniform)
        if view.nbytes % 4:
            view = memoryview(bytes(view) + b"\0" * (4 - view.nbytes % 4))
        self.queue.write_buffer(buf, 0, view)
        return buf

    def write_staged(self, buf: Any, data: Any, offset: int = 0, threads: int = 4) -> None:
        """`write` for large blocks: host bytes go through a ring of mapped staging buffers, filled by
        `threads` threads at once (numpy copies release the GIL), then copied on the GPU.

        Same ordering as `write` (after every dispatch recorded so far); same bytes land. The
        single-threaded host copy inside `queue.write_buffer` is what bounds plain writes.
        """
        import numpy as np

        src = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        if src.nbytes % 4 or src.nbytes < (64 << 10):
            self.write(buf, data, offset)
            return
        self._untaped()
        self.flush()
        self._staging_ring().write(buf, src, offset, threads)

    # ---- host pages: host RAM the GPU copies from (window streaming without a host copy per stream) --
    @property
    def has_host_pages(self) -> bool:
        """Whether `host_page` gives host-RAM pages here, checked once per device by a round trip.

        WebGPU's upload buffers (MAP_WRITE) may live in VRAM: gpu-allocator places them in VRAM the host
        sees through the BAR when the card exposes one (measured on the H200: 4 GiB of them took 4 GiB of
        VRAM; `bench/probes/host_page_probe.py`). Read-back buffers (MAP_READ) live in system RAM (4 GiB took
        4 GiB of host RAM and no VRAM there);
        the native feature mappable-primary-buffers lets them be copy sources, and wgpu maps them
        directly, so bytes written through the mapping are what the GPU copies. Both are checked here.
        """
        if not hasattr(self, "_host_pages_ok"):
            self._host_pages_ok = HOST_PAGE_FEATURE in self.device.features and self._host_page_round_trip()
        return self._host_pages_ok

    def _host_page_round_trip(self) -> bool:
        pattern = bytes(range(64))
        page = self.host_page(len(pattern))
        self.fill_page(page, pattern)
        dst = self.buffer(len(pattern))
        self.stream(page, 0, dst, 0, len(pattern))
        return self.read(dst) == pattern

    def host_page(self, nbytes: int) -> HostPage:
        """A page of host RAM (see `has_host_pages`) that `stream` copies from on the GPU, at PCIe speed
        and with no host-side copy."""
        U = self._wgpu.BufferUsage
        return HostPage(self.device.create_buffer(size=max(16, round_up(nbytes, 16)), usage=U.MAP_READ | U.COPY_SRC))

    def fill_page(self, page: HostPage, data: Any, offset: int = 0) -> None:
        """Copy host bytes (a multiple of 4) into `page` at `offset` (4-aligned), after every GPU copy
        that reads it."""
        if page.encoder is not None and page.encoder is self._encoder:
            self.flush()  # a recorded, unsubmitted copy reads the page: it must see the old bytes
        view = memoryview(data).cast("B")
        start, end = offset - offset % 8, round_up(offset + view.nbytes, 4)
        page.buffer.map_sync(self._wgpu.MapMode.READ, start, end - start)  # waits for copies reading it
        try:
            # mapped ranges start at multiples of 8: take the one from `start`, write from offset - start
            page.buffer._experimental_get_mapped_range(start, end - start)[offset - start: offset - start + view.nbytes] = view
        finally:
            page.buffer.unmap()

    def stream(self, page: HostPage, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None:
        """Record a GPU copy from a host page into a GPU buffer (ordered with the dispatches around it)."""
        self.copy(page.buffer, src_offset, dst, dst_offset, nbytes)
        page.encoder = self._encoder

    def _staging_ring(self) -> StagingRing:
        if not hasattr(self, "_ring"):
            self._ring = StagingRing(self)
        return self._ring

    # ---- the Recorder's calls on wgpu-py ---------------------------------------------------
    def _create_buffer(self, nbytes: int, uniform: bool) -> Any:
        U = self._wgpu.BufferUsage
        return self.device.create_buffer(size=nbytes, usage=(U.UNIFORM if uniform else U.STORAGE) | U.COPY_DST | U.COPY_SRC)

    def _queue_write(self, buf: Any, offset: int, view: memoryview) -> None:
        self.queue.write_buffer(buf, offset, view)

    def _encode_copy(self, encoder: Any, src: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None:
        encoder.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, nbytes)

    def _compile(self, name: str, code: str, entry: str) -> Any:
        try:
            module = self.device.create_shader_module(label=name, code=code)
            return self.device.create_compute_pipeline(label=name, layout="auto",
                                                       compute={"module": module, "entry_point": entry})
        except Exception as exc:
            raise ShaderError(f"{name}: {exc}") from exc

    def _create_bind_group(self, name: str, pipeline: Any, buffers: tuple[Any, ...]) -> Any:
        entries = self._bind_entries(buffers)
        return self.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)

    def _create_encoder(self) -> Any:
        return self.device.create_command_encoder()

    def _begin_pass(self, encoder: Any) -> Any:
        return encoder.begin_compute_pass()

    def _pass_ops(self, compute_pass: Any) -> tuple[Any, Any, Any]:
        return pass_ops.direct_ops(compute_pass) if self.direct_pass_calls else pass_ops.wgpu_py_ops(compute_pass)

    def _submit(self, encoder: Any) -> None:
        self.queue.submit([encoder.finish()])

    def _replay_mode(self) -> bool:
        """True: taped runs replay through wgpu-native's handles (`pass_ops.replay_native`)."""
        return self.direct_pass_calls and self.native_replay and pass_ops.native_available()

    def _prepare_run(self, entries: list[Any]) -> Any:
        return pass_ops.NativeRun(entries) if self._replay_mode() else entries

    def _replay_run(self, prepared: Any) -> None:
        if isinstance(prepared, pass_ops.NativeRun):
            pass_ops.replay_native(self._pass, prepared)
        else:
            super()._replay_run(prepared)

    def _create_texture(self, rows: int) -> WordTexture:
        T = self._wgpu.TextureUsage
        tex = self.device.create_texture(size=(TEXTURE_ROW_WORDS // 4, rows, 1), format="rgba32uint",
                                         usage=T.TEXTURE_BINDING | T.COPY_DST)
        return WordTexture(tex, tex.create_view(), rows)

    def _encode_copy_to_texture(self, encoder: Any, buf: Any, tex: WordTexture, first_row: int, rows: int,
                                width: int) -> None:
        encoder.copy_buffer_to_texture(
            {"buffer": buf, "offset": first_row * TEXTURE_ROW_BYTES, "bytes_per_row": TEXTURE_ROW_BYTES,
             "rows_per_image": rows},
            {"texture": tex.texture, "origin": (0, first_row, 0)}, (width, rows, 1))

    def _queue_write_texture(self, tex: WordTexture, data: memoryview, rows: int) -> None:
        self.queue.write_texture({"texture": tex.texture}, data,
                                 {"bytes_per_row": TEXTURE_ROW_BYTES, "rows_per_image": rows},
                                 (TEXTURE_ROW_WORDS // 4, rows, 1))

    def is_lost(self) -> bool:
        """True when the device is unusable: wgpu-py 0.32 has no `device.lost`, so probe it (creating a
        buffer fails with "Parent device is lost" on a dead device)."""
        try:
            self.device.create_buffer(size=16, usage=self._wgpu.BufferUsage.STORAGE)
        except Exception:  # noqa: BLE001 - any failure of the probe means the device is unusable
            return True
        return False

