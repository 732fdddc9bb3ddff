"""Bonsai: a small LLM runtime on WebGPU (wgpu-py + WGSL kernels)."""

__version__ = "0.1.0"
