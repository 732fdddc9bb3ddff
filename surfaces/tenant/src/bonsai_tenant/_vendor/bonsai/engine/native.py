"""The native wiring: open a GGUF file on the wgpu-py `Gpu`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import ModelConfig
from ..gguf import GGUFReader
from ..gpu.device import Gpu
from ..models import resolve_model
from .engine import Engine


def load_engine(path: str | Path | None = None, *, gpu: Any = None, **options: Any) -> Engine:
    """Open `path` (None: the default model), check it, upload it; options as in `Engine.__init__`.

    `gpu` defaults to a new native device.
    """
    reader = GGUFReader(resolve_model(path))
    cfg = ModelConfig.from_gguf(reader)
    return Engine(reader, cfg, gpu or Gpu.create(), **options)
