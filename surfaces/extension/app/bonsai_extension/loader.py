"""Check a GGUF handed to the panel is a model the engine runs, then put it on the GPU with progress."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bonsai.config import ModelConfig, check_tensors
from bonsai.engine import Engine
from bonsai.errors import BonsaiError
from bonsai.models import DEFAULT_MODEL, ModelRef

from .model_check import open_model

Progress = Callable[[str, float, str], None]  # (phase, fraction done 0..1 or -1 unknown, detail)

KNOWN_MODELS: dict[str, ModelRef] = {DEFAULT_MODEL.file: DEFAULT_MODEL}  # by file name: the published SHA-256


class ModelChecksumError(BonsaiError):
    """A file named as a known model whose bytes are not the published ones (damaged or altered)."""

    field = "sha256"

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def check_known(name: str, sha256: str) -> None:
    """Refuse a file named as a known model unless its SHA-256 is the published one."""
    ref = KNOWN_MODELS.get(name)
    if ref is not None and sha256.lower() != ref.sha256:
        raise ModelChecksumError(name, f"{name}: SHA-256 {sha256} is not the published {ref.sha256} of "
                                       f"{ref.distribution} {ref.version}; the file is damaged or altered and was "
                                       "not stored. Download it again.")


def inspect(path: str, name: str, sha256: str | None = None) -> dict:
    """Parse the file and everything the engine will need from it; errors name the file and field or tensor.
    With `sha256`, a file named as a known model must also have that model's published hash."""
    if sha256 is not None:
        check_known(name, sha256)
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
