"""The master copy of the KV cache in host RAM: every layer's windows as bytes, laid out as their slots."""

from __future__ import annotations

from typing import Any

from .layout import Kind, Layout


class HostMaster:
    """Per layer, `n_windows` slots' worth of bytes; `length[layer]` positions committed so far."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.layers = [bytearray(layout.n_windows * layout.slot_bytes) for _ in range(layout.n_layers)]
        self.length = [0] * layout.n_layers

    def window(self, layer: int, win: int) -> memoryview:
        """Window `win` of `layer`, laid out as its GPU slot (K block, then V block)."""
        size = self.layout.slot_bytes
        return memoryview(self.layers[layer])[win * size: (win + 1) * size]

    def put(self, layer: int, kind: Kind, pos: int, rows: Any) -> list[tuple[int, int]]:
        """Stored rows of `kind` for positions pos.. (bytes, position-major) into the master; returns the
        (byte offset, byte count) ranges of the layer that changed."""
        src = memoryview(rows).cast("B")
        row = self.layout.row_bytes(kind)
        host = self.layers[layer]
        changed = []
        for at, p, stop in self.layout.runs(kind, pos, pos + src.nbytes // row):
            host[at: at + (stop - p) * row] = src[(p - pos) * row: (stop - pos) * row]
            changed.append((at, (stop - p) * row))
        return changed

    def rows(self, layer: int, kind: Kind, start: int, end: int) -> bytes:
        """The stored rows of `kind` for positions [start, end), position-major."""
        row = self.layout.row_bytes(kind)
        host = self.layers[layer]
        return b"".join(host[at: at + (stop - p) * row] for at, p, stop in self.layout.runs(kind, start, end))
