"""The verbs every GPU backend offers (native wgpu-py `Gpu`, browser `BrowserGpu`), as a Protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import BonsaiError
from .limits import Limits


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


class GpuValidationError(BonsaiError):
    """The GPU rejected recorded work (WebGPU validation); the message is the driver's, with the label."""


class GpuBackend(Protocol):
    """What the runtime above `bonsai.gpu` may call; buffers and kernels are opaque handles."""

    dispatch_count: int
    limits: Limits

    @property
    def description(self) -> str: ...

    @property
    def max_binding_bytes(self) -> int: ...

    def buffer(self, nbytes: int, *, uniform: bool = False) -> Any: ...

    def upload(self, data: Any, *, uniform: bool = False) -> Any: ...

    def write(self, buf: Any, data: Any, offset: int = 0) -> None: ...

    def read(self, buf: Any, nbytes: int | None = None, offset: int = 0) -> bytes: ...

    def copy(self, src: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> None: ...

    def wait(self) -> None: ...

    def kernel(self, package: str, filename: str, entry: str = "main", **constants: object) -> Any: ...

    def dispatch(self, kernel: Any, buffers: list[Any] | tuple[Any, ...], groups: tuple[int, ...] | int) -> None: ...

    def forget_bindings(self) -> None: ...

    def flush(self) -> None: ...

    def is_lost(self) -> bool: ...


def round_up(n: int, multiple: int) -> int:
    """`n` rounded up to a multiple of `multiple` (buffer sizes and copy lengths must be 4-aligned)."""
    return (n + multiple - 1) // multiple * multiple
