"""Open a model file handed to the page (file picker or URL) with the stdlib GGUF reader."""

from __future__ import annotations

import os

from bonsai.gguf import GGUFReader


def open_model(path: str, name: str | None = None) -> GGUFReader:
    """Parse the GGUF file at `path` (in Pyodide's file system); errors name `name` (the user's file)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return GGUFReader.from_bytes(data, name=name or os.path.basename(path))


def run(path: str, name: str | None = None) -> dict:
    """Summarise the model's header: architecture, tensor count and the metadata the engine needs."""
    reader = open_model(path, name)
    arch = reader.require("general.architecture", str)
    return {
        "ok": True,
        "name": name or os.path.basename(path),
        "architecture": arch,
        "tensors": len(reader.tensors),
        "layers": reader.get(f"{arch}.block_count"),
        "gguf_version": reader.version,
    }
