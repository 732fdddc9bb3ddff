"""NumpyKVCache: the KV cache with the host-side numpy parts: grouped modes' quantisation and a numpy view.

`cache.KVCache` is pure Python so the browser can run it; everything that needs numpy lives here:
quantising (and, after a rewind, dequantising) a filled K/V group with the `formats` reference
(bit-identical to the group kernel; tested), and reading or writing the master as numpy arrays.
The native runtime (`bonsai.engine.native`) uses this class for every mode.
"""

from __future__ import annotations

import numpy as np

from .cache import KVCache
from .errors import NonFiniteKVError
from .format import codec as formats
from .format.codec import check_finite, k_view
from .format.rows import RowFormat
from .store.store import k_limit


class NumpyKVCache(KVCache):
    """`KVCache` for every mode, with the master readable as numpy (`host_rows`, `dequantised`)."""

    host_codec = True

    def _encode_rows(self, f32_rows: bytes, n: int, fmt: RowFormat, what: str) -> bytes:
        x = np.frombuffer(f32_rows, np.float32).reshape(n, self.n_kv, self.head_dim)
        return np.ascontiguousarray(formats.encode(x, fmt, what)).tobytes()

    def _decode_rows(self, rows: bytes, n: int, fmt: RowFormat) -> bytes:
        r = np.frombuffer(rows, np.uint32).reshape(n, self.n_kv, fmt.row_words(self.head_dim))
        return np.ascontiguousarray(formats.decode(r, fmt), np.float32).tobytes()

    def append_host(self, layer: int, k: np.ndarray, v: np.ndarray, pos: int) -> None:
        """Store numpy rows k, v [n, n_kv, hd] (f32) at [pos, pos+n); validated before anything changes."""
        k, v = np.asarray(k, np.float32), np.asarray(v, np.float32)
        self._check_range(layer, pos, len(k))
        check_finite(k, f"layer {layer} K")
        if self.m.grouped and np.abs(k).max(initial=0) >= k_limit(self.m.kf):
            raise NonFiniteKVError(f"layer {layer} K: a magnitude beyond the {self.m.k} format's f16 scale; not cached")
        if self.vres and np.isfinite(v).all() and np.abs(v).max(initial=0) >= k_limit(self.m.vf):
            raise NonFiniteKVError(f"layer {layer} V: a magnitude beyond the {self.m.v} format's f16 scale; not cached")
        ks = formats.encode(k_view(self.m, k), self.m.k_store, f"layer {layer} K")
        vs = formats.encode(v, self.m.v_store, f"layer {layer} V")
        self.sync_host()
        if self.m.grouped and pos - pos % self.G != self._hres_start[layer]:
            self._restart_residual(layer, pos)
        self._put_host(layer, pos, len(k), np.ascontiguousarray(ks).tobytes(), np.ascontiguousarray(vs).tobytes())
        for win in range(pos // self.window, (pos + len(k) - 1) // self.window + 1):
            slot = self._resident.get((layer, win))
            if slot is not None:
                self.gpu.write(slot, self._window_bytes(layer, win))
        if self.m.grouped:
            self.gpu.write(self._res[layer], self._residual_words(layer))
            self._gres_start[layer] = self._hres_start[layer]

    def host_rows(self, layer: int, kind: str) -> np.ndarray:
        """The master rows of `kind` ("k" or "v") for positions [0, length): [length, n_kv, rk|rv] u32.

        Grouped K: rows of the newest partial group are not quantised yet (see `residual`).
        """
        n = self.length[layer]
        words = self.rk if kind == "k" else self.rv
        return np.frombuffer(self._rows(layer, kind, 0, n), np.uint32).reshape(n, self.n_kv, words)

    def residual(self, layer: int, kind: str = "k") -> tuple[int, np.ndarray]:
        """Grouped K: (first position, f32 rows [length - first, n_kv, hd]) of the newest partial group
        (kind "v": its V rows, in modes that keep V in the residual too)."""
        start = self._hres_start[layer]
        raw = self._hres[layer] if kind == "k" else self._hres_v[layer]
        rows = np.frombuffer(bytes(raw), np.float32).reshape(self.G, self.n_kv, self.head_dim)
        return start, rows[: max(0, self.length[layer] - start)].copy()

    def dequantised(self, layer: int, kind: str) -> np.ndarray:
        """What attention reads for `kind`, as f32 [length, n_kv, hd] (K is rotated in q4r mode)."""
        rows = self.host_rows(layer, kind)
        if kind == "v" and self.vres:
            start, res = self.residual(layer, "v")
            return np.concatenate([formats.decode(rows[:start], self.m.vf), res])
        if kind == "v":
            return formats.decode(rows, self.m.vf)
        if not self.m.grouped:
            return formats.decode(rows, self.m.kf)
        start, res = self.residual(layer)
        return np.concatenate([formats.decode(rows[:start], self.m.k), res])
