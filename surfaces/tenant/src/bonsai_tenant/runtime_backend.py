"""The Backend that runs on the bonsai runtime (the synced copy of the GPU engine)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .default_model import default_model_path
from .errors import TenantError
from .events import Event


class RuntimeBackend:
    """A Backend on `bonsai.engine`; one generation at a time (one GPU device)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def open(cls, path: str | Path | None) -> RuntimeBackend:
        """The backend for a GGUF file, or the default model when `path` is None."""
        model = default_model_path() if path is None else Path(path)
        if not model.is_file():
            raise TenantError(f"{model}: no such model file")
        return cls(model)

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]],
        max_tokens: int,
        temperature: float,
    ) -> Iterator[Event]:
        raise TenantError("the bonsai engine is not in this build yet: pass a Backend to Assistant/create_app")
