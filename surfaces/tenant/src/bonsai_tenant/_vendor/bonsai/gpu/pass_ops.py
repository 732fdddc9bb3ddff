"""A compute pass's three per-dispatch calls straight into wgpu-native, skipping wgpu-py's Python layer.

A decode step replays ~250 dispatches (`Recorder.replay`); wgpu-py's `set_bind_group` builds a cffi
array for the (empty) dynamic offsets and keeps every object alive on every call, which made the
replay's Python cost per dispatch 2.5-3.5x that of the three C calls alone (bench/NOTES.md). The
recorder keeps its pipelines and bind groups alive itself (kernel and bind-group caches), and wgpu-core's
passes hold their own references. Falls back to wgpu-py's methods where its private cffi handle is
not there (another wgpu-py version), so results never depend on which path ran.

A taped step's runs of dispatches are replayed by `replay_native`: the same three C calls per dispatch
from one Python loop over wgpu-native's handles (`NativeRun`), not three Python calls wrapping them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

PassOps = tuple[Callable[..., None], Callable[..., None], Callable[..., None]]


def wgpu_py_ops(compute_pass: Any) -> PassOps:
    """wgpu-py's own methods (the reference path)."""
    return compute_pass.set_pipeline, compute_pass.set_bind_group, compute_pass.dispatch_workgroups


@cache
def _native_lib() -> tuple[Any, Any] | None:
    try:
        from wgpu.backends.wgpu_native._ffi import ffi, lib
    except ImportError:
        return None
    needed = ("wgpuComputePassEncoderSetPipeline", "wgpuComputePassEncoderSetBindGroup",
              "wgpuComputePassEncoderDispatchWorkgroups")
    return (ffi, lib) if all(hasattr(lib, name) for name in needed) else None


def direct_ops(compute_pass: Any) -> PassOps:
    """The same three calls made on wgpu-native directly, or `wgpu_py_ops` where that is not possible."""
    native = _native_lib()
    handle = getattr(compute_pass, "_internal", None)
    if native is None or handle is None:
        return wgpu_py_ops(compute_pass)
    ffi, lib = native
    set_pipeline_c = lib.wgpuComputePassEncoderSetPipeline
    set_bind_group_c = lib.wgpuComputePassEncoderSetBindGroup
    dispatch_c = lib.wgpuComputePassEncoderDispatchWorkgroups
    null = ffi.NULL

    def set_pipeline(pipeline: Any) -> None:
        set_pipeline_c(handle, pipeline._internal)

    def set_bind_group(index: int, bind_group: Any) -> None:
        set_bind_group_c(handle, index, bind_group._internal, 0, null)

    def dispatch_workgroups(x: int, y: int = 1, z: int = 1) -> None:
        dispatch_c(handle, x, y, z)

    return set_pipeline, set_bind_group, dispatch_workgroups


def native_available() -> bool:
    """Whether wgpu-native's calls can be made directly here."""
    return _native_lib() is not None


class NativeRun:
    """Taped (pipeline, bind group, groups) dispatches as wgpu-native's handles and three grid sizes each."""

    __slots__ = ("entries", "keep")

    def __init__(self, entries: list[Any]) -> None:
        self.keep = entries  # the wgpu-py objects own the handles: they live as long as the run
        self.entries = [(pipeline._internal, bind_group._internal, *(*groups, 1, 1)[:3])
                        for pipeline, bind_group, groups in entries]


def replay_native(compute_pass: Any, run: NativeRun) -> None:
    """Record `run`'s dispatches into `compute_pass` (set pipeline, set bind group 0, dispatch, as recorded)."""
    native = _native_lib()
    assert native is not None
    ffi, lib = native
    handle = compute_pass._internal
    set_pipeline = lib.wgpuComputePassEncoderSetPipeline
    set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
    dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
    null = ffi.NULL
    for pipeline, bind_group, x, y, z in run.entries:
        set_pipeline(handle, pipeline)
        set_bind_group(handle, 0, bind_group, 0, null)
        dispatch(handle, x, y, z)
