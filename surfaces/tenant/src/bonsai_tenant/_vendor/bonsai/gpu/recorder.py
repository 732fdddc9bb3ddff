"""What both GPU backends share: compiled-kernel and bind-group caches, one open encoder and compute
pass that dispatches are recorded into, submitting, and taping a step's dispatches for replay.

A backend subclasses `Recorder` and supplies the API calls (`_compile`, `_create_bind_group`,
`_create_encoder`, `_begin_pass`, `_pass_ops`, `_submit`, `_create_buffer`, `_queue_write`,
`_encode_copy`, ...); everything else (sizes, padding, the order of work, what a write or copy does to
an open tape) is decided here once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import GpuLimitError
from . import shaders
from .backend import (
    TEXTURE_ROW_BYTES,
    TEXTURE_ROW_WORDS,
    BufferRange,
    Kernel,
    KernelCache,
    WordTexture,
    round_up,
    texture_rows,
)
from .limits import Limits

_COPY_TO_TEXTURE = object()  # marks a tape entry that copies a buffer into a texture


class Tape(list):
    """A step's taped entries: (pipeline, bind group, groups) per dispatch, None per flush, texture copies.
    `runs` keeps them as the backend replays them (made by the first replay, for the backend's mode then)."""

    runs: tuple[Any, list[Any]] | None = None


class _Run:
    """Consecutive taped dispatches, in the form the backend replays them (`Recorder._prepare_run`)."""

    __slots__ = ("count", "prepared")

    def __init__(self, prepared: Any, count: int) -> None:
        self.prepared, self.count = prepared, count


class Recorder:
    """Records dispatches into one open compute pass; `flush` submits them."""

    limits: Limits
    adapter: Any  # .info: a mapping with "adapter_type" among others

    def __init__(self) -> None:
        self._kernels = KernelCache()
        self._bind_groups: dict[tuple, Any] = {}
        self._encoder: Any = None
        self._pass: Any = None
        self._ops: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]] | None = None
        self.dispatch_count = 0
        self.submits = 0  # encoders submitted so far (`flush`)
        self.compiled = 0  # pipelines compiled so far (`kernel` cache misses)
        self._tape: list[Any] | None = None  # dispatches being taped (`start_tape`), None markers = flush
        self._tape_clean = True  # no write, read or copy happened while taping
        # None: `is_cpu` follows the adapter; False: a GPU adapter's kernels even on a CPU one (the extension's
        # diagnostics page runs them on SwiftShader so Chrome's shader compiler sees every kernel a GPU gets)
        self.cpu_kernels: bool | None = None

    @property
    def max_binding_bytes(self) -> int:
        return self.limits.max_binding_bytes

    @property
    def is_cpu(self) -> bool:
        """The adapter runs on the CPU (lavapipe, SwiftShader): kernels pick their CPU variants (unless
        `cpu_kernels` says otherwise)."""
        if self.cpu_kernels is not None:
            return self.cpu_kernels
        return str(self.adapter.info.get("adapter_type", "")).lower() == "cpu"

    @staticmethod
    def _bind_entries(resources: tuple[Any, ...]) -> list[dict[str, Any]]:
        """Bind-group entries 0.. for buffers and word textures (their views), as both APIs take them."""
        return [{"binding": i, "resource": Recorder._resource(r)} for i, r in enumerate(resources)]

    @staticmethod
    def _resource(r: Any) -> Any:
        if isinstance(r, WordTexture):
            return r.view
        if isinstance(r, BufferRange):
            return {"buffer": r.buffer, "offset": r.offset, "size": r.size}
        return {"buffer": r}

    # ---- what a backend supplies ----------------------------------------------------------
    def _compile(self, name: str, code: str, entry: str) -> Any:
        """A compute pipeline for WGSL `code` (raise ShaderError naming `name` on failure)."""
        raise NotImplementedError

    def _create_bind_group(self, name: str, pipeline: Any, buffers: tuple[Any, ...]) -> Any:
        raise NotImplementedError

    def _create_encoder(self) -> Any:
        raise NotImplementedError

    def _begin_pass(self, encoder: Any) -> Any:
        raise NotImplementedError

    def _pass_ops(self, compute_pass: Any) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
        """(set_pipeline, set_bind_group, dispatch_workgroups) of an open pass."""
        raise NotImplementedError

    def _submit(self, encoder: Any) -> None:
        raise NotImplementedError

    def _replay_mode(self) -> Any:
        """What `_prepare_run` depends on (a tape's runs are made again when it changes)."""
        return None

    def _prepare_run(self, entries: list[Any]) -> Any:
        """Taped dispatches in the form `_replay_run` takes (by default as they are)."""
        return entries

    def _replay_run(self, prepared: Any) -> None:
        """Record prepared dispatches into the open pass."""
        assert self._ops is not None
        set_pipeline, set_bind_group, dispatch_workgroups = self._ops
        for pipeline, bind_group, groups in prepared:
            set_pipeline(pipeline)
            set_bind_group(0, bind_group)
            dispatch_workgroups(*groups)

    def _create_buffer(self, nbytes: int, uniform: bool) -> Any:
        """A zero-filled buffer of `nbytes` (a multiple of 16): uniform or storage, copy source and destination."""
        raise NotImplementedError

    def _queue_write(self, buf: Any, offset: int, view: memoryview) -> None:
        """The queue's write of host bytes (a multiple of 4) into `buf` at `offset`."""
        raise NotImplementedError

    def _encode_copy(self, encoder: Any, src: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None:
        raise NotImplementedError

    def _create_texture(self, rows: int) -> WordTexture:
        raise NotImplementedError

    def _queue_write_texture(self, tex: WordTexture, data: memoryview, rows: int) -> None:
        """The queue's write of `rows` whole rows of host bytes into `tex` from its first row."""
        raise NotImplementedError

    def _encode_copy_to_texture(self, encoder: Any, buf: Any, tex: WordTexture, first_row: int, rows: int,
                                width: int) -> None:
        """Texels [0, width) of rows [first_row, first_row + rows) <- the same bytes of `buf`."""
        raise NotImplementedError

    # ---- buffers: made, written and copied in order with the recorded work -----------------------
    def buffer(self, nbytes: int, *, uniform: bool = False) -> Any:
        """A zero-filled GPU buffer usable as storage (or uniform), copy source and destination; sized to
        whole 16-byte texels so any prefix of it can be copied into a word texture."""
        self.limits.check_buffer(nbytes)
        return self._create_buffer(max(16, round_up(nbytes, 16)), uniform)

    def write(self, buf: Any, data: Any, offset: int = 0) -> None:
        """Copy host bytes into `buf` at `offset`, ordered after every dispatch recorded so far."""
        self._untaped()
        self.flush()
        self.initialise(buf, data, offset)  # nothing is left in an open pass

    def initialise(self, buf: Any, data: Any, offset: int = 0) -> None:
        """Copy host bytes into `buf` at `offset` where no dispatch waiting in the open pass binds them (a new
        `StepParams` slot, or a step's own set of slots): the open pass stays open and a tape being made stays
        replayable, as when `upload` makes a buffer with its data. The bytes land before the open pass's work
        and after everything submitted."""
        view = memoryview(data).cast("B")
        if view.nbytes % 4:
            view = memoryview(bytes(view) + b"\0" * (4 - view.nbytes % 4))
        self._queue_write(buf, offset, view)

    def copy(self, src: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None:
        """Record a GPU-side copy between buffers (ordered with the dispatches around it)."""
        self._untaped()
        self._end_pass()
        self._encode_copy(self._open_encoder(), src, src_offset, dst, dst_offset, nbytes)

    # ---- word textures ---------------------------------------------------------------------
    def write_texture(self, tex: WordTexture, data: Any) -> None:
        """Host bytes into `tex` from its first word (whole rows: the tail is zero-filled)."""
        view = memoryview(data).cast("B")
        rows = texture_rows(-(-view.nbytes // 4))
        self._queue_write_texture(tex, memoryview(bytes(view) + bytes(rows * TEXTURE_ROW_BYTES - view.nbytes)), rows)

    def word_texture(self, words: int) -> WordTexture:
        """A zero-filled word texture holding at least `words` u32 words (whole rows of TEXTURE_ROW_WORDS)."""
        rows = texture_rows(words)
        if rows > self.limits.max_texture_rows:
            raise GpuLimitError(f"a texture of {words} words needs {rows} rows, above this adapter's "
                                f"maxTextureDimension2D ({self.limits.max_texture_rows})")
        return self._create_texture(rows)

    def copy_to_texture(self, buf: Any, tex: WordTexture, nbytes: int, offset: int = 0) -> None:
        """Record: bytes [offset, offset + nbytes) of `buf` -> the same words of `tex` (offset a multiple of
        TEXTURE_ROW_BYTES, nbytes of 16). Part of a tape: replaying it copies again, as a dispatch reads again."""
        first = offset // TEXTURE_ROW_BYTES
        full, rest = divmod(nbytes, TEXTURE_ROW_BYTES)
        self._end_pass()
        encoder = self._open_encoder()
        pieces = [(first, full, TEXTURE_ROW_WORDS // 4)] if full else []
        if rest:
            pieces.append((first + full, 1, -(-rest // 16)))
        for first_row, rows, width in pieces:
            self._encode_copy_to_texture(encoder, buf, tex, first_row, rows, width)
            if self._tape is not None:
                self._tape.append((_COPY_TO_TEXTURE, buf, tex, first_row, rows, width))

    # ---- kernels and dispatches ----------------------------------------------------------
    def kernel(self, package: str, filename: str, entry: str = "main", **constants: object) -> Kernel:
        """Compile (once) the WGSL file `filename` of `package` with its `{{NAME}}` constants filled."""
        cached = self._kernels.get(package, filename, entry, constants)
        if cached is not None:
            return cached
        name = f"{package}/{filename}"
        code = shaders.render(shaders.load_source(package, filename), constants, name=name)
        kernel = Kernel(name, self._compile(name, code, entry))
        self.compiled += 1
        return self._kernels.put(package, filename, entry, constants, kernel)

    def dispatch(self, kernel: Kernel, buffers: list[Any] | tuple[Any, ...], groups: tuple[int, ...] | int) -> None:
        """Record one dispatch; `buffers[i]` is bound at @group(0) @binding(i)."""
        if isinstance(groups, int):
            groups = (groups,)
        if max(groups) > self.limits.max_groups:
            self.limits.check_groups(kernel.name, groups)
        key = (id(kernel.pipeline), *map(id, buffers))
        bind_group = self._bind_groups.get(key)
        if bind_group is None:
            self.limits.check_bindings(kernel.name, (int(b.size) for b in buffers))
            bind_group = self._create_bind_group(kernel.name, kernel.pipeline, tuple(buffers))
            # keep the buffers alive with the bind group so ids cannot be reused while cached
            self._bind_groups[key] = bind_group
            self._bind_groups[(key, "refs")] = tuple(buffers)
        self._record(kernel.pipeline, bind_group, groups)
        if self._tape is not None:
            self._tape.append((kernel.pipeline, bind_group, groups))

    def _record(self, pipeline: Any, bind_group: Any, groups: tuple[int, ...]) -> None:
        self._open_pass()
        assert self._ops is not None
        set_pipeline, set_bind_group, dispatch_workgroups = self._ops
        set_pipeline(pipeline)
        set_bind_group(0, bind_group)
        dispatch_workgroups(*groups)
        self.dispatch_count += 1

    def forget_bindings(self) -> None:
        """Drop cached bind groups (call after freeing many buffers)."""
        self._bind_groups.clear()

    def flush(self) -> None:
        """Submit everything recorded so far."""
        if self._tape is not None:
            self._tape.append(None)
        if self._encoder is None:
            return
        self._end_pass()
        encoder, self._encoder = self._encoder, None
        self._submit(encoder)
        self.submits += 1

    # ---- taping: record a step's dispatches once, replay them while the step's shape holds ----------
    def start_tape(self) -> None:
        """Remember every dispatch (and flush) from now on, for `replay`."""
        self._tape, self._tape_clean = Tape(), True

    def stop_tape(self) -> list[Any] | None:
        """The dispatches since `start_tape`, or None if a write, read or copy came between them (their
        data would not be replayed)."""
        tape, self._tape = self._tape, None
        return tape if self._tape_clean else None

    def _untaped(self) -> None:
        """A write, read or copy: a tape being made now cannot be replayed (its data would be missing)."""
        if self._tape is not None:
            self._tape_clean = False

    def replay(self, tape: list[Any]) -> None:
        """Record the taped dispatches again: same pipelines, bind groups and sizes, no Python per op (each run
        of dispatches as the backend prepared it once: `Tape.runs`)."""
        for run in self._runs(tape):
            if run is None:
                self.flush()
            elif isinstance(run, _Run):
                self._open_pass()
                self._replay_run(run.prepared)
                self.dispatch_count += run.count
            else:
                self._end_pass()
                self._encode_copy_to_texture(self._open_encoder(), *run[1:])

    def _runs(self, tape: list[Any]) -> list[Any]:
        """The tape's entries with each run of consecutive dispatches prepared as one `_Run` (kept on a `Tape`)."""
        mode = self._replay_mode()
        cached = getattr(tape, "runs", None)
        if cached is not None and cached[0] == mode:
            return cached[1]
        runs: list[Any] = []
        dispatches: list[Any] = []
        for entry in [*tape, None]:
            if entry is not None and entry[0] is not _COPY_TO_TEXTURE:
                dispatches.append(entry)
                continue
            if dispatches:
                runs.append(_Run(self._prepare_run(dispatches), len(dispatches)))
                dispatches = []
            runs.append(entry)
        runs.pop()  # the None added to close the last run
        if isinstance(tape, Tape):
            tape.runs = (mode, runs)
        return runs

    # ---- encoder and pass ---------------------------------------------------------------
    def _open_encoder(self) -> Any:
        if self._encoder is None:
            self._encoder = self._create_encoder()
        return self._encoder

    def _open_pass(self) -> None:
        if self._pass is None:
            self._pass = self._begin_pass(self._open_encoder())
            self._ops = self._pass_ops(self._pass)

    def _end_pass(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = self._ops = None
