"""Small immutable parameter buffers, created once per distinct content and reused.

`Gpu.write` submits the open pass, so writing parameters between dispatches would split a batch.
Instead every distinct parameter block gets its own buffer, created before recording starts (or
the first time it is seen) and bound as-is afterwards.
"""

from __future__ import annotations

from typing import Any

from .words import pack_u32, param_key


class ParamCache:
    """Buffers keyed by their u32 content; at most `limit` kept (oldest dropped first)."""

    def __init__(self, gpu: Any, limit: int = 4096) -> None:
        self.gpu = gpu
        self.limit = limit
        self._bufs: dict[tuple[int, ...], Any] = {}

    def get(self, *words: int | float) -> Any:
        """The buffer holding `words` (ints as u32, floats as f32 bits)."""
        key = param_key(words)
        buf = self._bufs.get(key)
        if buf is None:
            if len(self._bufs) >= self.limit:
                self._bufs.pop(next(iter(self._bufs)))
            buf = self.gpu.upload(pack_u32(key))
            self._bufs[key] = buf
        return buf
