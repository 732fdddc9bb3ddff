"""KVCache: the host-RAM master copy of K/V (numpy, cache format) and GPU windows under a budget.

Layout (u32 words; rw = row words of the mode, W = window positions):
    host[layer]      [n_windows, 2, W, n_kv, rw]   2 = K, V; one window is one contiguous block
    GPU slot buffer  [2, W, n_kv, rw]              the same bytes, so streaming is one write
    staging buffer   appended rows (K block, V block per append), then their flags at sync time
The API the engine uses is documented in `bonsai.kv` (the package docstring).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import quant4
from .attention import Attention, Window
from .errors import KVError, NonFiniteKVError
from .params import ParamCache
from .rotate import hadamard
from .store import MODES, Store


@dataclass(frozen=True)
class _Pending:
    """Rows appended on the GPU whose host copy is still in the staging buffer."""

    layer: int
    pos: int
    n: int
    word: int  # first staging word of the K block (V block follows)
    flag: int  # first flag index


class KVCache:
    """Per-layer K/V in `mode` ("f32", "q4", "q4r"): host master + GPU windows (see `bonsai.kv`)."""

    def __init__(self, gpu: Any, n_layers: int, n_kv_heads: int, head_dim: int, max_positions: int,
                 mode: str = "f32", window: int = 64, vram_budget: int | None = None,
                 staging_positions: int = 512, variant: str = "auto") -> None:
        if mode not in MODES:
            raise KVError(f"KVCache mode must be one of {', '.join(MODES)}, got {mode!r}")
        if min(n_layers, n_kv_heads, head_dim, max_positions, window, staging_positions) < 1:
            raise KVError("KVCache sizes (layers, kv heads, head_dim, positions, window, staging) must be >= 1")
        self.n_layers, self.n_kv, self.head_dim, self.mode = n_layers, n_kv_heads, head_dim, mode
        self.max_positions, self.window = max_positions, window
        self.rw = quant4.row_words(head_dim, mode)
        self.pos_words = n_kv_heads * self.rw  # one position's K (or V) rows
        self.n_windows = -(-max_positions // window)
        self.slot_bytes = 2 * window * self.pos_words * 4
        if vram_budget is None:
            self.max_slots = n_layers * self.n_windows
        else:
            self.max_slots = int(vram_budget) // self.slot_bytes
            if self.max_slots < 1:
                raise KVError(f"vram_budget={vram_budget} bytes is below one window slot "
                              f"({self.slot_bytes} bytes = 2 x {window} positions x {self.pos_words * 4} bytes); "
                              "raise the budget or lower `window`")
        self._host = [np.zeros((self.n_windows, 2, window, n_kv_heads, self.rw), np.uint32)
                      for _ in range(n_layers)]
        self.length = [0] * n_layers  # positions committed to the host master, per layer
        self.staging_positions = staging_positions
        self.variant = variant  # attention kernel variant ("auto": serial on CPU adapters)
        self._staging_words = staging_positions * n_layers * 2 * self.pos_words
        self._staging_flags = staging_positions * n_layers * 2 * n_kv_heads
        self._bind(gpu)

    # ---- GPU side -------------------------------------------------------------------------
    def _bind(self, gpu: Any) -> None:
        """(Re)create every GPU object on `gpu`; the host master is untouched."""
        self.gpu = gpu
        self._params = ParamCache(gpu)
        self._store = Store(gpu, self.n_kv, self.head_dim, self.mode, self._params)
        self._attn: dict[int, Attention] = {}
        self._resident: OrderedDict[tuple[int, int], Any] = OrderedDict()  # LRU, oldest first
        self._slots_made = 0
        self._staging = gpu.buffer((self._staging_words + self._staging_flags) * 4)
        self._flags = gpu.buffer(self._staging_flags * 4)
        self._pending: list[_Pending] = []
        self._used_words = 0
        self._used_flags = 0
        self._state: Any = None
        self.streamed_windows = 0  # windows written from the host master (streaming or restore)

    def _slot(self, layer: int, win: int, current: _Pending | None = None) -> Any:
        """The GPU buffer holding window `win` of `layer`, streamed in from the master if needed.

        `current` is the append being recorded (its own rows are copied in by the caller).
        """
        key = (layer, win)
        buf = self._resident.get(key)
        if buf is not None:
            self._resident.move_to_end(key)
            return buf
        lo, hi = win * self.window, (win + 1) * self.window
        if any(e is not current and e.layer == layer and e.pos < hi and e.pos + e.n > lo for e in self._pending):
            self.sync_host()  # rows of this window are only in staging: bring the master up to date
        if self._slots_made < self.max_slots:
            buf = self.gpu.buffer(self.slot_bytes)
            self._slots_made += 1
        else:
            _, buf = self._resident.popitem(last=False)
        if win * self.window < self.length[layer]:
            self.gpu.write(buf, self._host[layer][win])
            self.streamed_windows += 1
        self._resident[key] = buf
        return buf

    def append(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int) -> None:
        """Store rows [pos, pos+n) from GPU buffers k_buf/v_buf ([n, n_kv, hd] f32) into the cache."""
        self._check_range(layer, pos, n)
        for start in range(0, n, self.staging_positions):
            self._append_chunk(layer, k_buf, v_buf, pos + start, min(self.staging_positions, n - start), start)

    def _append_chunk(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int, src_pos: int) -> None:
        words, flags = 2 * n * self.pos_words, 2 * n * self.n_kv
        if self._used_words + words > self._staging_words:
            self.sync_host()
        entry = _Pending(layer, pos, n, self._used_words, self._used_flags)
        self._store.record(k_buf, v_buf, n, self._staging, entry.word, self._flags, entry.flag, src_pos)
        self._pending.append(entry)
        self._used_words += words
        self._used_flags += flags
        half = n * self.pos_words * 4
        p = pos
        while p < pos + n:
            win = p // self.window
            end = min(pos + n, (win + 1) * self.window)
            slot = self._slot(layer, win, entry)
            src = entry.word * 4 + (p - pos) * self.pos_words * 4
            dst = (p - win * self.window) * self.pos_words * 4
            nbytes = (end - p) * self.pos_words * 4
            self.gpu.copy(self._staging, src, slot, dst, nbytes)
            self.gpu.copy(self._staging, src + half, slot, dst + self.window * self.pos_words * 4, nbytes)
            p = end

    def sync_host(self) -> None:
        """One readback of every row appended since the last sync into the host master."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        used_words, used_flags = self._used_words, self._used_flags
        self._used_words = self._used_flags = 0
        self.gpu.copy(self._flags, 0, self._staging, used_words * 4, used_flags * 4)
        raw = np.frombuffer(self.gpu.read(self._staging, (used_words + used_flags) * 4), np.uint32)
        data, flags = raw[:used_words], raw[used_words:]
        for e in pending:  # validate everything before committing anything
            f = flags[e.flag: e.flag + 2 * e.n * self.n_kv]
            if f.any():
                i = int(np.flatnonzero(f)[0])
                kind, row = ("K", i) if i < e.n * self.n_kv else ("V", i - e.n * self.n_kv)
                why = "a NaN/inf value" if f[i] == 1 else "a magnitude beyond the 4-bit f16 scale"
                raise NonFiniteKVError(
                    f"layer {e.layer} position {e.pos + row // self.n_kv} {kind} head {row % self.n_kv}: "
                    f"{why}; the rows appended since the last sync were not cached"
                )
        for e in pending:
            block = data[e.word: e.word + 2 * e.n * self.pos_words].reshape(2, e.n, self.n_kv, self.rw)
            self._put_host(e.layer, e.pos, block[0], block[1])

    def attend(self, layer: int, q_buf: Any, out_buf: Any, pos_base: int, n_q: int, n_heads: int) -> None:
        """out[t] = causal GQA attention of q[t] (absolute position pos_base + t) over positions <= it."""
        kv_len = pos_base + n_q
        self._check_range(layer, pos_base, n_q)
        att = self._attention(n_heads)
        need = att.state_bytes(n_q)
        if self._state is None or self._state.size < need:
            self._state = self.gpu.buffer(need)
        n_win = -(-kv_len // self.window)
        wins = [self._window(w, self._resident.get((layer, w))) for w in range(n_win)]
        for i, desc in enumerate(wins):  # parameter buffers first, so recording is not split
            att.window_params(desc, i == 0)
        att.call_params(pos_base, n_q)
        q = att.begin(q_buf, pos_base, n_q)
        for w in range(n_win):
            slot = self._slot(layer, w)
            att.fold_window(q, self._state, pos_base, n_q, self._window(w, slot), w == 0)
        att.finish(self._state, out_buf, pos_base, n_q)

    def _window(self, w: int, slot: Any) -> Window:
        return Window(slot, slot, w * self.window, (w + 1) * self.window, w * self.window,
                      0, self.window * self.pos_words)

    def _attention(self, n_heads: int) -> Attention:
        att = self._attn.get(n_heads)
        if att is None:
            if n_heads % self.n_kv:
                raise KVError(f"n_heads={n_heads} is not a multiple of the cache's n_kv_heads={self.n_kv}")
            att = self._attn[n_heads] = Attention(self.gpu, n_heads, self.n_kv, self.head_dim, self.mode,
                                                   params=self._params, variant=self.variant)
        return att

    def restore(self, new_gpu: Any) -> None:
        """Rebuild every GPU object on `new_gpu` from the host master (after device loss).

        Rows appended since the last `sync_host()` are lost: sync once per step.
        """
        keys = list(self._resident)
        self._bind(new_gpu)
        for layer, win in keys[-self.max_slots:]:
            self._slot(layer, win)

    # ---- host side ------------------------------------------------------------------------
    def append_host(self, layer: int, k: np.ndarray, v: np.ndarray, pos: int) -> None:
        """Store numpy rows k, v [n, n_kv, hd] (f32) at [pos, pos+n); validated before anything changes."""
        k, v = np.asarray(k, np.float32), np.asarray(v, np.float32)
        self._check_range(layer, pos, len(k))
        fmt = "f32" if self.mode == "f32" else "q4"
        quant4.check_finite(k, f"layer {layer} K")
        ks = quant4.encode(hadamard(k) if self.mode == "q4r" else k, fmt, f"layer {layer} K")
        vs = quant4.encode(v, fmt, f"layer {layer} V")
        self._put_host(layer, pos, ks, vs)
        for win in range(pos // self.window, (pos + len(k) - 1) // self.window + 1):
            slot = self._resident.get((layer, win))
            if slot is not None:
                self.gpu.write(slot, self._host[layer][win])

    def _put_host(self, layer: int, pos: int, k_rows: np.ndarray, v_rows: np.ndarray) -> None:
        p = np.arange(pos, pos + len(k_rows))
        self._host[layer][p // self.window, 0, p % self.window] = k_rows
        self._host[layer][p // self.window, 1, p % self.window] = v_rows
        self.length[layer] = max(self.length[layer], pos + len(k_rows))

    def host_rows(self, layer: int, kind: str) -> np.ndarray:
        """The master rows of `kind` ("k" or "v") for positions [0, length): [length, n_kv, rw] u32."""
        rows = self._host[layer][:, "kv".index(kind)].reshape(-1, self.n_kv, self.rw)
        return rows[: self.length[layer]]

    def dequantised(self, layer: int, kind: str) -> np.ndarray:
        """What attention reads for `kind`, as f32 [length, n_kv, hd] (K is rotated in q4r mode)."""
        return quant4.decode(self.host_rows(layer, kind), "f32" if self.mode == "f32" else "q4")

    def bytes_per_position(self) -> int:
        """GPU bytes one position takes in one layer (K and V), measured on an actual slot buffer."""
        buf = next(iter(self._resident.values()), None)
        if buf is None:
            buf = self.gpu.buffer(self.slot_bytes)
        return int(buf.size) // self.window

    def _check_range(self, layer: int, pos: int, n: int) -> None:
        if not 0 <= layer < self.n_layers:
            raise KVError(f"layer {layer} out of range (cache has {self.n_layers} layers)")
        if n < 1 or pos < 0 or pos + n > self.max_positions:
            raise KVError(f"positions [{pos}, {pos + n}) outside the cache (max_positions={self.max_positions})")
