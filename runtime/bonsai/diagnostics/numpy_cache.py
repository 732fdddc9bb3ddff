"""NumpyKVCache: the KV cache with its master readable and writable as numpy, for tests and measurements.

`KVCache` itself never quantises on the host; this subclass adds `append_host` (rows written
straight into the master with the numpy codec, the kernels' oracle, as if the GPU had appended
them) and numpy views of what the cache holds (`host_rows`, `residual`, `dequantised`).
"""

from __future__ import annotations

import numpy as np

from ..kv.cache import KVCache
from ..kv.errors import KVError, NonFiniteKVError
from ..kv.format import codec
from ..kv.format.codec import check_finite, k_view
from ..kv.layout import Kind
from ..kv.store.store import k_limit


class NumpyKVCache(KVCache):
    """`KVCache` plus numpy access to its master (`append_host`, `host_rows`, `residual`, `dequantised`)."""

    def append_host(self, layer: int, k: np.ndarray, v: np.ndarray, pos: int) -> None:
        """Store numpy rows k, v [n, n_kv, hd] (f32) at [pos, pos+n); validated before anything changes."""
        k, v = np.asarray(k, np.float32), np.asarray(v, np.float32)
        m, n = self.layout.mode, len(k)
        self._check_range(layer, pos, n)
        check_finite(k, f"layer {layer} K")
        if m.grouped and np.abs(k).max(initial=0) >= k_limit(m.kf):
            raise NonFiniteKVError(f"layer {layer} K: a magnitude beyond the {m.k} format's f16 scale; not cached")
        if m.v_residual and np.isfinite(v).all() and np.abs(v).max(initial=0) >= k_limit(m.vf):
            raise NonFiniteKVError(f"layer {layer} V: a magnitude beyond the {m.v} format's f16 scale; not cached")
        ks = codec.encode(k_view(m, k), m.k_store, f"layer {layer} K")
        vs = codec.encode(v, m.v_store, f"layer {layer} V")
        self.sync_host()
        if not m.v_residual:
            self._put(layer, Kind.V, pos, np.ascontiguousarray(vs).tobytes())
        if self.residual is None:
            self._put(layer, Kind.K, pos, np.ascontiguousarray(ks).tobytes())
        else:
            self._append_groups(layer, pos, ks, vs)
        self.master.length[layer] = max(self.master.length[layer], pos + n)
        for win in range(pos // self.window, (pos + n - 1) // self.window + 1):
            slot = self._slots.resident.get((layer, win))
            if slot is not None:
                self.gpu.write(slot, self.master.window(layer, win))
                self._mirrors.mark_all(slot)

    def _append_groups(self, layer: int, pos: int, ks: np.ndarray, vs: np.ndarray) -> None:
        """f32 rows into the host residual; every group they fill quantised by the numpy codec into the master."""
        res, m, G = self.residual, self.layout.mode, self.layout.group
        assert res is not None
        if pos - pos % G != res.host_start[layer]:
            raise KVError(f"layer {layer}: append_host at {pos} is not in the residual's group "
                          f"({res.host_start[layer]}); append in order")
        p = pos
        while p < pos + len(ks):
            g0 = p - p % G
            end = min(pos + len(ks), g0 + G)
            v = memoryview(vs[p - pos: end - pos].tobytes()) if m.v_residual else None
            res.commit_rows(layer, p, end - p, memoryview(ks[p - pos: end - pos].tobytes()), v)
            if end == g0 + G:
                x = np.frombuffer(bytes(res.host_k[layer]), np.float32).reshape(G, self.n_kv, self.head_dim)
                self._put(layer, Kind.K, g0, np.ascontiguousarray(codec.encode(x, m.kf)).tobytes())
                if m.v_residual:
                    xv = np.frombuffer(bytes(res.host_v[layer]), np.float32).reshape(G, self.n_kv, self.head_dim)
                    self._put(layer, Kind.V, g0, np.ascontiguousarray(codec.encode(xv, m.vf)).tobytes())
                res.commit_group(layer, g0)
            p = end
        self.gpu.write(res.bufs[layer], res.host_words(layer))
        self._mirrors.mark_all(res.bufs[layer])
        res.gpu_start[layer] = res.host_start[layer]

    def host_rows(self, layer: int, kind: str) -> np.ndarray:
        """The master rows of `kind` ("k" or "v") for positions [0, length): [length, n_kv, words] u32.

        Grouped K: rows of the newest partial group are not quantised yet (see `residual`).
        """
        n = self.length[layer]
        k = Kind(kind)
        words = self.layout.k_row_words if k is Kind.K else self.layout.v_row_words
        return np.frombuffer(self.master.rows(layer, k, 0, n), np.uint32).reshape(n, self.n_kv, words)

    def residual_rows(self, layer: int, kind: str = "k") -> tuple[int, np.ndarray]:
        """Grouped K: (first position, f32 rows [length - first, n_kv, hd]) of the newest partial group
        (kind "v": its V rows, in modes that keep V in the residual too)."""
        res = self.residual
        assert res is not None
        start = res.host_start[layer]
        raw = res.host_k[layer] if kind == "k" else res.host_v[layer]
        rows = np.frombuffer(bytes(raw), np.float32).reshape(self.layout.group, self.n_kv, self.head_dim)
        return start, rows[: max(0, self.length[layer] - start)].copy()

    def dequantised(self, layer: int, kind: str) -> np.ndarray:
        """What attention reads for `kind`, as f32 [length, n_kv, hd] (K is rotated in q4r mode)."""
        m = self.layout.mode
        rows = self.host_rows(layer, kind)
        if kind == "v" and m.v_residual:
            start, res = self.residual_rows(layer, "v")
            return np.concatenate([codec.decode(rows[:start], m.vf), res])
        if kind == "v":
            return codec.decode(rows, m.vf)
        if not m.grouped:
            return codec.decode(rows, m.kf)
        start, res = self.residual_rows(layer)
        return np.concatenate([codec.decode(rows[:start], m.k), res])
