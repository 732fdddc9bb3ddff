"""Check a GGUF handed to the panel is a model the engine runs, then put it on the GPU with progress."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bonsai.config import ModelConfig, check_tensors
from bonsai.engine import Engine

from .model_check import open_model

Progress = Callable[[str, float, str], None]  # (phase, fraction done 0..1 or -1 unknown, detail)


def inspect(path: str, name: str) -> dict:
    """Parse the file and everything the engine will need from it; errors name the file and field or tensor."""
    reader = open_model(path, name)
    cfg = ModelConfig.from_gguf(reader)
    check_tensors(reader, cfg)
    return summary(reader, cfg)


def summary(reader: Any, cfg: ModelConfig) -> dict:
    """What the panel shows about a model."""
    return {"name": reader.path, "architecture": reader.require("general.architecture", str), "layers": cfg.n_layers,
            "dim": cfg.dim, "vocab": cfg.vocab_size, "context": cfg.context_length,
            "weight_bytes": sum(t.n_bytes for t in reader.tensors.values())}


def load(gpu: Any, path: str, name: str, kv: str, progress: Progress, max_positions: int = 2048) -> Engine:
    """The engine on `gpu` (a PanelGpu) in KV mode `kv`, reporting the weights' upload as phase "weights"."""
    reader = open_model(path, name)
    cfg = ModelConfig.from_gguf(reader)
    total = sum(t.n_bytes for t in reader.tensors.values())
    done = 0

    def on_upload(nbytes: int) -> None:
        nonlocal done
        done += nbytes
        progress("weights", min(1.0, done / total), f"{done / 1e6:.0f} of {total / 1e6:.0f} MB on the GPU")

    gpu.on_upload = on_upload
    try:
        return Engine(reader, cfg, gpu, kv=kv, progress=False, max_positions=max_positions)
    finally:
        gpu.on_upload = None


def compiling(gpu: Any, progress: Progress, expected: int) -> Callable[[], int]:
    """Report each shader `gpu` compiles as phase "shaders" (of `expected`, 0 if unknown); call the returned
    function when done: it stops reporting and returns how many were compiled."""
    count, started = 0, time.perf_counter()

    def on_compile(name: str) -> None:
        nonlocal count
        count += 1
        short = name.rsplit("/", 1)[-1]
        progress("shaders", min(1.0, count / expected) if expected else -1.0, f"{count} compiled ({short})")

    gpu.on_compile = on_compile

    def finish() -> int:
        gpu.on_compile = None
        progress("shaders", 1.0, f"{count} compiled in {time.perf_counter() - started:.1f} s")
        return count

    return finish
