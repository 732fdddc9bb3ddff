"""Word-texture copies of the cache's GPU buffers, for the CPU attention kernel (serial.wgsl).

On a CPU adapter a texel fetch costs a fraction of a storage-buffer load, so the serial kernel reads
K and V through textures. Each slot or residual buffer it folds gets a mirror texture, and the rows
written since the last fold (a step's appended positions, or everything after a stream or a rewrite)
are copied in just before, in the same recording: a copy from GPU memory, no host round trip.
"""

from __future__ import annotations

from typing import Any

from ..gpu.backend import TEXTURE_ROW_BYTES, WordTexture


class Mirrors:
    """Mirror textures by buffer, and the byte ranges of each buffer written since its last refresh."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._mirrors: dict[int, tuple[Any, WordTexture]] = {}  # id(buffer) -> (buffer, texture)
        self._dirty: dict[int, list[tuple[int, int]]] = {}

    def mark(self, buf: Any, lo: int, hi: int) -> None:
        """Bytes [lo, hi) of `buf` were written (or will be, by work recorded before the next fold). Kept only
        for a buffer that has a mirror: a mirror made later copies the whole buffer, and where no kernel reads
        textures (GPUs) no mark would ever be taken back (a server's marks grew with every request)."""
        if hi > lo and id(buf) in self._mirrors:
            self._dirty.setdefault(id(buf), []).append((lo, hi))

    def mark_all(self, buf: Any) -> None:
        self.mark(buf, 0, int(buf.size))

    def texture(self, buf: Any) -> WordTexture:
        """`buf`'s mirror, with every row written since the last refresh copied in (recorded)."""
        entry = self._mirrors.get(id(buf))
        if entry is None:
            entry = self._mirrors[id(buf)] = (buf, self.gpu.word_texture(int(buf.size) // 4))
            self.mark_all(buf)
        for first, last in self._rows(id(buf)):
            self.gpu.copy_to_texture(buf, entry[1], min(int(buf.size), last * TEXTURE_ROW_BYTES) - first * TEXTURE_ROW_BYTES,
                                     first * TEXTURE_ROW_BYTES)
        return entry[1]

    def pending_rows(self, buf: Any) -> tuple[tuple[int, int], ...]:
        """The texture rows the next refresh of `buf` copies (part of a decode step's replay key)."""
        return tuple(self._merged(self._dirty.get(id(buf), [])))

    def _rows(self, key: int) -> list[tuple[int, int]]:
        return self._merged(self._dirty.pop(key, []))

    @staticmethod
    def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Byte ranges as whole texture rows [first, last), overlapping ones merged."""
        rows = sorted((lo // TEXTURE_ROW_BYTES, -(-hi // TEXTURE_ROW_BYTES)) for lo, hi in ranges)
        out: list[tuple[int, int]] = []
        for first, last in rows:
            if out and first <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], last))
            else:
                out.append((first, last))
        return out
