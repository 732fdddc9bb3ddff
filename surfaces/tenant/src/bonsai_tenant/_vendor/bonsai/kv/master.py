"""The master copy of the KV cache in host RAM: every layer's windows as bytes, laid out as their slots."""

from __future__ import annotations

from typing import Any

from .layout import Kind, Layout
from .residual import Residual
from .staging import Entry


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

    def commit(self, e: Entry, k_rows: memoryview, v_rows: memoryview, residual: Residual | None) -> list[tuple[int, int]]:
        """One staging entry's rows, as read back, into the master (a grouped mode's f32 rows of the newest
        group into the host residual instead); returns the (byte offset, byte count) ranges of the layer
        that changed."""
        m = self.layout.mode
        changed = []
        if e.group:  # a K group (and in q4res its V) quantised by the group kernel
            assert residual is not None
            changed += self.put(e.layer, Kind.K, e.pos, k_rows)
            if m.v_residual:
                changed += self.put(e.layer, Kind.V, e.pos, v_rows)
            residual.commit_group(e.layer, e.pos, e.n)
            return changed
        if not m.v_residual:
            changed += self.put(e.layer, Kind.V, e.pos, v_rows)
        if residual is None:
            changed += self.put(e.layer, Kind.K, e.pos, k_rows)
        else:  # f32 rows of the newest group (an entry lies in one group): into the host residual
            residual.commit_rows(e.layer, e.pos, e.n, k_rows, v_rows if m.v_residual else None)
        self.length[e.layer] = max(self.length[e.layer], e.pos + e.n)
        return changed
