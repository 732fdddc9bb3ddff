"""The verbs every GPU backend offers (native wgpu-py `Gpu`, browser `BrowserGpu`), as a Protocol."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from ..errors import BonsaiError
from .limits import Limits

T = TypeVar("T")


@dataclass(frozen=True)
class Kernel:
    """A compiled compute pipeline and the name of the shader it came from (same shape as device.Kernel)."""

    name: str
    pipeline: Any = field(compare=False, repr=False)


class KernelCache:
    """Compiled kernels by (package, file, entry, constants). Looked up on every dispatch, so each call
    site's own (unsorted) key is tried first and a hit costs no sort; a miss falls back to the
    canonical sorted key, so equal constants in another order still compile once."""

    def __init__(self) -> None:
        self._kernels: dict[tuple, Kernel] = {}

    def get(self, package: str, filename: str, entry: str, constants: dict[str, object]) -> Kernel | None:
        fast = (package, filename, entry, *constants.items())
        kernel = self._kernels.get(fast)
        if kernel is None:
            kernel = self._kernels.get((package, filename, entry, tuple(sorted(constants.items()))))
            if kernel is not None:
                self._kernels[fast] = kernel
        return kernel

    def put(self, package: str, filename: str, entry: str, constants: dict[str, object], kernel: Kernel) -> Kernel:
        self._kernels[(package, filename, entry, tuple(sorted(constants.items())))] = kernel
        self._kernels[(package, filename, entry, *constants.items())] = kernel
        return kernel


TEXTURE_ROW_WORDS = 4096  # u32 words per row of a word texture: 1024 rgba32uint texels, 16 KiB
TEXTURE_ROW_BYTES = TEXTURE_ROW_WORDS * 4


@dataclass(eq=False)
class WordTexture:
    """u32 words in an rgba32uint 2D texture, row-major: word i is component i % 4 of texel i // 4, texel j
    at (j % 1024, j // 1024). Kernels read it with textureLoad: on CPU adapters (lavapipe) a texel fetch
    costs a fraction of a storage-buffer load (bench/NOTES.md), so the hot data of matmul and attention
    is read this way there."""

    texture: Any = field(repr=False)
    view: Any = field(repr=False)
    rows: int
    size: int = 0  # not a storage binding: `Limits.check_bindings` sees 0 bytes

    @property
    def words(self) -> int:
        return self.rows * TEXTURE_ROW_WORDS


@dataclass(eq=False)
class BufferRange:
    """Bytes [offset, offset + size) of `buffer`, bound as one storage binding (a `StepParams` slot);
    `offset` is a multiple of 256, which every adapter's minStorageBufferOffsetAlignment divides."""

    buffer: Any = field(repr=False)
    offset: int
    size: int


def texture_rows(words: int) -> int:
    """Rows of a word texture holding `words` u32 words."""
    return max(1, -(-words // TEXTURE_ROW_WORDS))


class PendingRead:
    """A readback started by `read_soon`: `result(use)` waits for its bytes and returns `use` of them (a
    view valid only inside the call). Taken once."""

    def __init__(self, finish: Callable[[Callable[[memoryview], Any]], Any]) -> None:
        self._finish: Callable[[Callable[[memoryview], Any]], Any] | None = finish

    def result(self, use: Callable[[memoryview], T]) -> T:
        if self._finish is None:
            raise RuntimeError("PendingRead.result: this read was already taken")
        finish, self._finish = self._finish, None
        return cast(T, finish(use))


def ready_read(data: bytes) -> PendingRead:
    """A `PendingRead` of bytes already read (backends that cannot leave a read in flight)."""
    return PendingRead(lambda use: use(memoryview(data)))


class GpuValidationError(BonsaiError):
    """The GPU rejected recorded work (WebGPU validation); the message is the driver's, with the label."""


class GpuBackend(Protocol):
    """What the runtime above `bonsai.gpu` may call; buffers and kernels are opaque handles."""

    dispatch_count: int
    submits: int  # encoders submitted so far
    limits: Limits
    reads_in_flight: bool  # `read_soon` returns before its bytes arrive (False: it reads now)

    @property
    def description(self) -> str: ...

    @property
    def max_binding_bytes(self) -> int: ...

    @property
    def is_cpu(self) -> bool:
        """The adapter runs on the CPU (lavapipe, SwiftShader): kernels pick their CPU variants."""
        ...

    def buffer(self, nbytes: int, *, uniform: bool = False) -> Any: ...

    def upload(self, data: Any, *, uniform: bool = False) -> Any: ...

    def write(self, buf: Any, data: Any, offset: int = 0) -> None: ...

    def initialise(self, buf: Any, data: Any, offset: int = 0) -> None:
        """`write` of bytes no dispatch waiting in the open pass binds: nothing is submitted first, so the
        bytes land before that pass's work (and after everything submitted)."""
        ...

    def write_staged(self, buf: Any, data: Any, offset: int = 0) -> None:
        """`write` for large blocks (the native backend fills mapped staging buffers from threads)."""
        ...

    def read(self, buf: Any, nbytes: int | None = None, offset: int = 0) -> bytes: ...

    def read_with(self, buf: Any, nbytes: int, use: Callable[[memoryview], T], offset: int = 0) -> T:
        """`use` applied to `nbytes` of `buf` from `offset`, read back after all recorded work: a view valid
        only inside the call (the native backend lends the mapped readback memory: no copy)."""
        ...

    def read_soon(self, buf: Any, nbytes: int, offset: int = 0) -> PendingRead:
        """Start reading `nbytes` of `buf` from `offset` after all recorded work and return at once: work
        recorded afterwards neither waits for the read nor delays it (the native backend; the browser's
        reads now)."""
        ...

    def read_queued(self, buf: Any, nbytes: int, offset: int = 0) -> PendingRead:
        """`read_soon` whose copy goes with the next submit and whose buffer is mapped only when `result` asks,
        without holding back the submits recorded meanwhile (the native backend; the browser's reads now)."""
        ...

    def read_gathered(self, buf: Any, spans: list[tuple[int, int]]) -> PendingRead:
        """`read_queued` of several ranges of `buf`, (byte offset, byte count) each, counts multiples of 4: their
        bytes back to back in one read."""
        ...

    def copy(self, src: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None: ...

    # word textures (`WordTexture`): what CPU adapters read matmul and attention data through
    def word_texture(self, words: int) -> WordTexture: ...

    def write_texture(self, tex: WordTexture, data: Any) -> None: ...

    def copy_to_texture(self, buf: Any, tex: WordTexture, nbytes: int, offset: int = 0) -> None:
        """Record: bytes [offset, offset + nbytes) of `buf` -> the same words of `tex` (row-aligned offset,
        nbytes a multiple of 16; taped like a dispatch)."""
        ...

    def wait(self) -> None: ...

    def kernel(self, package: str, filename: str, entry: str = "main", **constants: object) -> Any: ...

    def dispatch(self, kernel: Any, buffers: list[Any] | tuple[Any, ...], groups: tuple[int, ...] | int) -> None: ...

    def forget_bindings(self) -> None: ...

    def flush(self) -> None: ...

    def is_lost(self) -> bool: ...

    # taping: record a step's dispatches once, replay them while the step's shape holds
    def start_tape(self) -> None: ...

    def stop_tape(self) -> list[Any] | None: ...

    def replay(self, tape: list[Any]) -> None: ...

    # host pages: host RAM the GPU copies from (window streaming with no host copy); where a backend
    # has none (`has_host_pages` False) the others are never called
    @property
    def has_host_pages(self) -> bool: ...

    def host_page(self, nbytes: int) -> Any: ...

    def fill_page(self, page: Any, data: Any, offset: int = 0) -> None: ...

    def stream(self, page: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None: ...


def round_up(n: int, multiple: int) -> int:
    """`n` rounded up to a multiple of `multiple` (buffer sizes and copy lengths must be 4-aligned)."""
    return (n + multiple - 1) // multiple * multiple
