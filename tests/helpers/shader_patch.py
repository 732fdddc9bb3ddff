"""Mutation tests' tool: compile kernels from a WGSL file with one piece of its text replaced (an injected bug)."""

from __future__ import annotations

from typing import Any

from bonsai.gpu import shaders
from bonsai.gpu.backend import KernelCache


def patch_shader(monkeypatch: Any, gpu: Any, filename: str, old: str, new: str) -> None:
    """Kernels compiled from `filename` (after its includes) from now on get `old` replaced by `new` once;
    `old` must be there. The device's kernel cache is emptied, so every kernel is compiled afresh."""
    real = shaders.load_source

    def patched(package: str, name: str) -> str:
        source = real(package, name)
        if name != filename:
            return source
        assert old in source, f"{filename}: the text to mutate is not there: {old!r}"
        return source.replace(old, new, 1)

    monkeypatch.setattr(shaders, "load_source", patched)
    monkeypatch.setattr(gpu, "_kernels", KernelCache())
