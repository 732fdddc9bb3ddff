"""The adapter limits the runtime's kernels depend on, checked before work is recorded, never after.

WebGPU clamps out-of-range storage accesses instead of failing, so a buffer bigger than a binding may
hold or a dispatch wider than a dimension allows would compute silently wrong results, or fail with a
driver message far from its cause. Each backend checks buffers and dispatches against these limits and
raises `GpuLimitError` naming the limit; callers that can split their work (the attention driver, the
engine's batch) size it from these numbers first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import GpuLimitError

MAX_GROUPS = 65535  # WebGPU's maxComputeWorkgroupsPerDimension (the minimum every adapter offers)


def workgroups(n: int, size: int = 64) -> int:
    """Workgroups of `size` invocations that cover n items (the kernels' @workgroup_size is 64)."""
    return -(-n // size)


def grid(groups: int) -> tuple[int, int]:
    """`groups` workgroups as (x, y) with x <= MAX_GROUPS; kernels read the flat index as y * 65535 + x."""
    return min(groups, MAX_GROUPS), -(-groups // MAX_GROUPS)


@dataclass(frozen=True)
class Limits:
    """The limits of one device (WebGPU names in the messages)."""

    max_binding_bytes: int  # maxStorageBufferBindingSize
    max_buffer_bytes: int  # maxBufferSize
    max_groups: int = MAX_GROUPS  # maxComputeWorkgroupsPerDimension
    max_invocations: int = 256  # maxComputeInvocationsPerWorkgroup
    max_texture_rows: int = 8192  # maxTextureDimension2D: rows of a word texture
    max_storage_buffers: int = 8  # maxStorageBuffersPerShaderStage (8: WebGPU's default)

    def check_buffer(self, nbytes: int) -> None:
        if nbytes > self.max_buffer_bytes:
            raise GpuLimitError(f"a {nbytes}-byte buffer is above this adapter's maxBufferSize "
                                f"({self.max_buffer_bytes} bytes)")

    def check_bindings(self, kernel: str, sizes: Iterable[int]) -> None:
        for i, size in enumerate(sizes):
            if size > self.max_binding_bytes:
                raise GpuLimitError(f"{kernel}: binding {i} is {size} bytes, above this adapter's "
                                    f"maxStorageBufferBindingSize ({self.max_binding_bytes} bytes)")

    def check_groups(self, kernel: str, groups: tuple[int, ...]) -> None:
        if max(groups) > self.max_groups:
            raise GpuLimitError(f"{kernel}: {groups} workgroups, above this adapter's "
                                f"maxComputeWorkgroupsPerDimension ({self.max_groups})")


def native_limits(device_limits: dict) -> Limits:
    """From wgpu-py's `device.limits` (hyphenated keys)."""
    return Limits(int(device_limits["max-storage-buffer-binding-size"]), int(device_limits["max-buffer-size"]),
                  int(device_limits.get("max-compute-workgroups-per-dimension", MAX_GROUPS)),
                  int(device_limits.get("max-compute-invocations-per-workgroup", 256)),
                  int(device_limits.get("max-texture-dimension-2d", 8192)),
                  int(device_limits.get("max-storage-buffers-per-shader-stage", 8)))


def browser_limits(js_limits: object) -> Limits:
    """From a JS `GPUSupportedLimits`."""
    def get(name: str, default: int) -> int:
        return int(getattr(js_limits, name, default) or default)

    return Limits(get("maxStorageBufferBindingSize", 1 << 27), get("maxBufferSize", 1 << 28),
                  get("maxComputeWorkgroupsPerDimension", MAX_GROUPS), get("maxComputeInvocationsPerWorkgroup", 256),
                  get("maxTextureDimension2D", 8192), get("maxStorageBuffersPerShaderStage", 8))
