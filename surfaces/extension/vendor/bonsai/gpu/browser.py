"""The browser GPU backend: the `Gpu` verbs over `navigator.gpu` in Pyodide, blocking through JSPI.

Same verbs and semantics as the native `bonsai.gpu.device.Gpu` (buffer, upload, write, read, copy,
wait, kernel, dispatch, flush), so code above the seam runs unchanged on either backend. Awaiting a
WebGPU promise (adapter, device, pipeline compilation, `mapAsync`, `onSubmittedWorkDone`) uses
`pyodide.ffi.run_sync`, which suspends the WebAssembly stack through JSPI: no busy-waiting, but the
Python code must have been entered through `pyodide.runPythonAsync` (or `callPromising`).

Device loss: `device.lost` resolves -> `lost` holds the reason and every later verb that submits or
waits raises `DeviceLostError`; recover as natively, with a fresh `BrowserGpu.create()` and
re-uploaded state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import DeviceLostError, GpuUnavailableError, ShaderError
from .backend import (
    TEXTURE_ROW_BYTES,
    TEXTURE_ROW_WORDS,
    GpuValidationError,
    PendingRead,
    T,
    WordTexture,
    ready_read,
    round_up,
)
from .jsbridge import WANTED_LIMITS, Adapter, ffi, is_null, js_message
from .limits import browser_limits
from .recorder import Recorder


class BrowserGpu(Recorder):
    """One WebGPU device of the page, with the same caches, batching and taping as the native `Gpu`."""

    def __init__(self, device: Any, adapter: Any) -> None:
        super().__init__()
        self._js, self._run_sync, self._to_js, self._create_proxy = ffi()
        self.device = device
        self.adapter = Adapter(adapter)
        self.queue = device.queue
        self._errors: list[str] = []
        self._copy_args: dict[tuple, tuple[Any, Any, Any, tuple[Any, Any]]] = {}  # _encode_copy_to_texture's
        self.lost: str | None = None
        self.limits = browser_limits(device.limits)
        self.reads_in_flight = False  # read_soon reads now (`read_soon`)
        # JS keeps these callbacks; the proxies live as long as this object.
        self._on_lost_proxy = self._create_proxy(self._on_lost)
        device.lost.then(self._on_lost_proxy)
        self._on_error_proxy = self._create_proxy(self._on_error)
        device.addEventListener("uncapturederror", self._on_error_proxy)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def create(cls, power_preference: str = "high-performance") -> BrowserGpu:
        """Open the page's WebGPU adapter and a device on it with the adapter's full limits."""
        js, run_sync, to_js, _ = ffi()
        gpu: Any = getattr(js.navigator, "gpu", None)
        if is_null(gpu):
            raise GpuUnavailableError(
                "this browser exposes no WebGPU (navigator.gpu is undefined); use a current Chrome or "
                "Chromium, or start it with --enable-unsafe-webgpu"
            )
        adapter = run_sync(gpu.requestAdapter(to_js({"powerPreference": power_preference},
                                                     dict_converter=js.Object.fromEntries)))
        if is_null(adapter):
            raise GpuUnavailableError("navigator.gpu.requestAdapter() found no adapter; enable WebGPU "
                                      "(chrome://gpu shows why it is off)")
        limits = {name: getattr(adapter.limits, name) for name in WANTED_LIMITS}
        try:
            device = run_sync(adapter.requestDevice(to_js({"requiredLimits": limits},
                                                          dict_converter=js.Object.fromEntries)))
        except Exception as exc:  # a JsException from a rejected promise
            raise GpuUnavailableError(f"WebGPU adapter refused a device: {exc}") from exc
        return cls(device, adapter)

    @property
    def description(self) -> str:
        info = self.adapter.info
        name = info["description"] or info["device"] or info["vendor"] or "unknown adapter"
        return f"{name} (WebGPU, {info['architecture'] or 'unknown architecture'}, {info['adapter_type']})"

    # ---- buffers ------------------------------------------------------------------------
    def upload(self, data: Any, *, uniform: bool = False) -> Any:
        """A new buffer holding `data` (bytes, memoryview, array.array)."""
        view = memoryview(data).cast("B")
        buf = self.buffer(view.nbytes, uniform=uniform)
        self.write(buf, view)
        return buf

    def write_staged(self, buf: Any, data: Any, offset: int = 0) -> None:
        """`write` (the page's queue takes large blocks as they are)."""
        self.write(buf, data, offset)

    # ---- host pages: none in the browser (WebGPU buffers cannot be mapped and copied from at once)
    has_host_pages = False

    def host_page(self, nbytes: int) -> Any:
        raise GpuUnavailableError("the browser backend has no host pages (has_host_pages is False)")

    def fill_page(self, page: Any, data: Any, offset: int = 0) -> None:
        raise GpuUnavailableError("the browser backend has no host pages (has_host_pages is False)")

    def stream(self, page: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None:
        raise GpuUnavailableError("the browser backend has no host pages (has_host_pages is False)")

    def read_with(self, buf: Any, nbytes: int, use: Callable[[memoryview], T], offset: int = 0) -> T:
        """`use` applied to `read`'s bytes (the page copies them out of JS anyway)."""
        return use(memoryview(self.read(buf, nbytes, offset)))

    def read_soon(self, buf: Any, nbytes: int, offset: int = 0) -> PendingRead:
        """`read` now (a read left in flight would need the page's event loop between steps)."""
        return ready_read(self.read(buf, nbytes, offset))

    def read_queued(self, buf: Any, nbytes: int, offset: int = 0) -> PendingRead:
        """`read` now, as `read_soon`."""
        return self.read_soon(buf, nbytes, offset)

    def read_gathered(self, buf: Any, spans: list[tuple[int, int]]) -> PendingRead:
        """`read` of several ranges of `buf` ((byte offset, byte count), counts multiples of 4) now, their bytes
        back to back: one staging buffer, one submit."""
        return ready_read(self._read_spans(buf, spans, sum(n for _, n in spans)))

    def read(self, buf: Any, nbytes: int | None = None, offset: int = 0) -> bytes:
        """Finish all recorded work and return `nbytes` of `buf` from `offset`."""
        size = int(buf.size) - offset if nbytes is None else nbytes
        return self._read_spans(buf, [(offset, round_up(size, 4))], size)

    def _read_spans(self, buf: Any, spans: list[tuple[int, int]], size: int) -> bytes:
        """The first `size` bytes of `spans` of `buf` copied back to back, after all recorded work."""
        self._untaped()
        self.flush()
        padded = sum(n for _, n in spans)
        U = self._js.GPUBufferUsage
        staging = self.device.createBuffer(self._obj({"size": max(4, padded), "usage": U.MAP_READ | U.COPY_DST}))
        try:
            encoder = self.device.createCommandEncoder()
            at = 0
            for offset, n in spans:
                encoder.copyBufferToBuffer(buf, offset, staging, at, n)
                at += n
            self.queue.submit(self._to_js([encoder.finish()]))
            self._await(staging.mapAsync(self._js.GPUMapMode.READ), "reading a buffer back")
            data = staging.getMappedRange(0, padded).to_bytes()[:size]
            staging.unmap()
        finally:
            staging.destroy()
        self._raise_errors()
        return data

    def wait(self) -> None:
        """Block (suspending through JSPI, not spinning) until the queue has finished its work."""
        self.flush()
        self._await(self.queue.onSubmittedWorkDone(), "waiting for the GPU")
        self._raise_errors()

    # ---- the Recorder's calls on navigator.gpu ---------------------------------------------
    def _create_buffer(self, nbytes: int, uniform: bool) -> Any:
        U = self._js.GPUBufferUsage
        usage = (U.UNIFORM if uniform else U.STORAGE) | U.COPY_DST | U.COPY_SRC
        return self.device.createBuffer(self._obj({"size": nbytes, "usage": usage}))

    def _queue_write(self, buf: Any, offset: int, view: memoryview) -> None:
        with self._js_bytes(view) as data:
            self.queue.writeBuffer(buf, offset, data)

    def _encode_copy(self, encoder: Any, src: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None:
        encoder.copyBufferToBuffer(src, src_offset, dst, dst_offset, nbytes)

    def _compile(self, name: str, code: str, entry: str) -> Any:
        # An error scope keeps a bad shader's validation error here, not in a later read.
        self.device.pushErrorScope("validation")
        try:
            pipeline, problems = self._pipeline(name, code, entry)
        finally:
            scoped = self._run_sync(self.device.popErrorScope())
        if problems or not is_null(scoped):
            raise ShaderError("\n".join(problems) or f"{name}: {scoped.message}")
        return pipeline

    def _create_bind_group(self, name: str, pipeline: Any, buffers: tuple[Any, ...]) -> Any:
        entries = self._bind_entries(buffers)
        return self.device.createBindGroup(self._obj({"label": name, "layout": pipeline.getBindGroupLayout(0),
                                                      "entries": entries}))

    def _create_encoder(self) -> Any:
        return self.device.createCommandEncoder()

    def _begin_pass(self, encoder: Any) -> Any:
        return encoder.beginComputePass()

    def _pass_ops(self, compute_pass: Any) -> tuple[Any, Any, Any]:
        # bound methods looked up once per pass: each JS attribute lookup costs a round trip
        return compute_pass.setPipeline, compute_pass.setBindGroup, compute_pass.dispatchWorkgroups

    def _submit(self, encoder: Any) -> None:
        self.queue.submit(self._to_js([encoder.finish()]))

    def _create_texture(self, rows: int) -> WordTexture:
        T = self._js.GPUTextureUsage
        tex = self.device.createTexture(self._obj({"size": [TEXTURE_ROW_WORDS // 4, rows, 1], "format": "rgba32uint",
                                                   "usage": T.TEXTURE_BINDING | T.COPY_DST}))
        return WordTexture(tex, tex.createView(), rows)

    def _encode_copy_to_texture(self, encoder: Any, buf: Any, tex: WordTexture, first_row: int, rows: int,
                                width: int) -> None:
        # A decode step copies x into a texture ~180 times: the three JS descriptors are built once per
        # copy and reused (converting them each time was about a third of a replayed step's host time).
        key = (id(buf), id(tex), first_row, rows, width)
        args = self._copy_args.get(key)
        if args is None:
            args = self._copy_args[key] = (
                self._obj({"buffer": buf, "offset": first_row * TEXTURE_ROW_BYTES, "bytesPerRow": TEXTURE_ROW_BYTES,
                           "rowsPerImage": rows}),
                self._obj({"texture": tex.texture, "origin": [0, first_row, 0]}),
                self._to_js([width, rows, 1]),
                (buf, tex))  # keeps buf and tex alive with their entry, so their ids stay theirs
        encoder.copyBufferToTexture(*args[:3])

    def _queue_write_texture(self, tex: WordTexture, data: memoryview, rows: int) -> None:
        with self._js_bytes(data) as js_data:
            self.queue.writeTexture(self._obj({"texture": tex.texture}), js_data,
                                    self._obj({"bytesPerRow": TEXTURE_ROW_BYTES, "rowsPerImage": rows}),
                                    self._to_js([TEXTURE_ROW_WORDS // 4, rows, 1]))

    def _pipeline(self, name: str, code: str, entry: str) -> tuple[Any, list[str]]:
        """(pipeline or None, compiler errors as `name:line:col: message`)."""
        module = self.device.createShaderModule(self._obj({"label": name, "code": code}))
        info = self._await(module.getCompilationInfo(), f"compiling {name}")
        problems = [f"{name}:{m.lineNum}:{m.linePos}: {m.message}" for m in info.messages if m.type == "error"]
        if problems:
            return None, problems
        descriptor = {"label": name, "layout": "auto", "compute": {"module": module, "entryPoint": entry}}
        try:
            return self._run_sync(self.device.createComputePipelineAsync(self._obj(descriptor))), []
        except Exception as exc:  # GPUPipelineError arrives as a JsException
            return None, [f"{name}: {js_message(exc)}"]

    def flush(self) -> None:
        """Submit everything recorded so far (DeviceLostError once the device is gone)."""
        if self.lost is not None:
            raise DeviceLostError(f"the WebGPU device was lost ({self.lost}); create a new BrowserGpu")
        super().flush()

    def forget_bindings(self) -> None:
        """Drop cached bind groups and copy descriptors (call after freeing many buffers)."""
        super().forget_bindings()
        self._copy_args.clear()

    def is_lost(self) -> bool:
        """True once the device's `lost` promise has resolved."""
        self._run_sync(self._js.Promise.resolve(None))  # let a pending `lost` callback run
        return self.lost is not None

    def destroy(self) -> None:
        """Destroy the device (its `lost` promise then resolves with reason "destroyed")."""
        self.device.destroy()

    # ---- internals ----------------------------------------------------------------------
    @contextmanager
    def _js_bytes(self, view: memoryview) -> Iterator[Any]:
        """A zero-copy typed-array view of Python bytes for one call, released right after it."""
        proxy = self._create_proxy(view)
        js_view = proxy.getBuffer("u8")
        try:
            yield js_view.data
        finally:
            js_view.release()
            proxy.destroy()

    def _obj(self, value: dict) -> Any:
        """A Python descriptor as a plain JS object (nested dicts and lists too)."""
        return self._to_js(value, dict_converter=self._js.Object.fromEntries)

    def _await(self, promise: Any, doing: str) -> Any:
        """Suspend until `promise` settles; a rejection after device loss is a DeviceLostError."""
        try:
            return self._run_sync(promise)
        except Exception as exc:
            self._run_sync(self._js.Promise.resolve(None))  # let a pending `lost` callback run
            if self.lost is not None:
                raise DeviceLostError(f"the WebGPU device was lost while {doing} ({self.lost})") from exc
            raise GpuValidationError(f"WebGPU failed while {doing}: {js_message(exc)}") from exc

    def _raise_errors(self) -> None:
        if self.lost is not None:
            raise DeviceLostError(f"the WebGPU device was lost ({self.lost}); create a new BrowserGpu")
        if self._errors:
            first, more = self._errors[0], len(self._errors) - 1
            self._errors.clear()
            raise GpuValidationError(first + (f" (and {more} more)" if more else ""))

    def _on_lost(self, info: Any) -> None:
        self.lost = f"{info.reason}: {info.message}" if info.message else str(info.reason)

    def _on_error(self, event: Any) -> None:
        self._errors.append(str(event.error.message))
