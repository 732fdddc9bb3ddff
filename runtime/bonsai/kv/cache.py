"""KVCache: the host-RAM master copy of K/V (bytes, cache format) and GPU windows under a budget.

Layout (u32 words; rk / rv = K / V row words of the mode, W = window positions):
    host[layer]      [n_windows, W*n_kv*rk + W*n_kv*rv]   K block then V block; one window contiguous
    GPU slot buffer  [W*n_kv*rk + W*n_kv*rv]              the same bytes, so streaming is one write
    staging buffer   appended rows (K block, V block per append), then their flags at sync time
    host page        under a VRAM budget on backends that have them: host RAM mirroring one window
                     of the master, the source of the GPU copy that streams the window into a slot

Grouped-K modes (kc4*): K is quantised per channel over groups of G positions (`formats`: 32 for
c4, 64 for c4a).
The newest, partial group is kept as f32 rows, the residual: on the GPU in its own buffer per layer
[G, n_kv, hd] f32, in the master as bytes of the same layout. The store kernel writes K
as f32 into staging; the rows are copied into the residual buffer and, when a group fills, the
group kernel quantises the residual into the group's window slot (windows are whole groups:
W % G == 0). Attention folds the quantised windows, then the residual as a last window whose
K rows are f32 (same state, same order: the windowed == whole-cache invariant is unchanged). The
host master mirrors this at `sync_host`, quantising a filled group with the numpy reference (bit-
identical to the group kernel; tested). Appending into an already quantised group (a rewind)
restarts the residual from that group's dequantised rows: exactly the values attention read.

This module is pure Python (it runs in the browser under Pyodide, where there is no numpy): the
row modes only move bytes on the host. Grouped modes need the host to quantise and dequantise
groups, which `numpy_host.NumpyKVCache` supplies (`_encode_rows` / `_decode_rows`); it also reads
the master as numpy arrays (`host_rows`, `dequantised`, `append_host`) for tests and measurements.
The API the engine uses is documented in `bonsai.kv` (the package docstring).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..gpu.backend import round_up
from ..gpu.params import ParamCache, StepParams
from .attention.driver import Attention, Window
from .errors import KVError, NonFiniteKVError
from .format.modes import MODES, Mode, get_mode
from .format.rows import GROUP, RowFormat
from .store.scatter import Scatter
from .store.store import GroupStore, Store

ALSO_BYTES = 64  # room at the end of the staging buffer for `sync_host(also=...)`


@dataclass(frozen=True)
class _Pending:
    """Rows appended on the GPU whose host copy is still in the staging buffer."""

    layer: int
    pos: int
    n: int
    word: int  # first staging word of the K block (V block follows)
    flag: int  # first flag index


class KVCache:
    """Per-layer K/V in a `bonsai.kv.format.modes` mode: host master + GPU windows (see `bonsai.kv`)."""

    host_codec = False  # True in subclasses that implement _encode_rows / _decode_rows (grouped modes)

    def __init__(self, gpu: Any, n_layers: int, n_kv_heads: int, head_dim: int, max_positions: int,
                 mode: str = "f32", window: int = 64, vram_budget: int | None = None,
                 staging_positions: int = 512, variant: str = "auto") -> None:
        if mode not in MODES:
            raise KVError(f"KVCache mode must be one of {', '.join(MODES)}, got {mode!r}")
        if min(n_layers, n_kv_heads, head_dim, max_positions, window, staging_positions) < 1:
            raise KVError("KVCache sizes (layers, kv heads, head_dim, positions, window, staging) must be >= 1")
        self.m = get_mode(mode)
        if self.m.grouped and not self.host_codec:
            raise KVError(f"KV mode {mode} quantises K per group on the host, which needs numpy: use "
                          "bonsai.kv.numpy_host.NumpyKVCache, or a row mode (" +
                          ", ".join(n for n, m in MODES.items() if not m.grouped) + ")")
        self.G = self.m.group or GROUP  # positions per K group (grouped modes)
        if self.m.grouped and window % self.G:
            raise KVError(f"KV mode {mode} quantises K in groups of {self.G} positions: window must be a "
                          f"multiple of {self.G}, got {window}")
        try:
            self.rk, self.rv = self.m.row_words(head_dim)
        except ValueError as exc:
            raise KVError(f"KV mode {mode}: {exc}") from None
        self.n_layers, self.n_kv, self.head_dim, self.mode = n_layers, n_kv_heads, head_dim, mode
        self.max_positions, self.window = max_positions, window
        self.rw = self.rk  # kept for callers of the single-format API (equal to rv except mixed modes)
        self.rks = self.m.k_store.row_words(head_dim)  # K row words as the store kernel writes them
        self.rvs = self.m.v_store.row_words(head_dim)  # V row words as the store kernel writes them
        self.vres = self.m.v_residual  # V of the newest group kept in f32 as well
        self.k_words, self.v_words = n_kv_heads * self.rk, n_kv_heads * self.rv  # one position's rows
        self.pos_words = self.k_words + self.v_words
        self.n_windows = -(-max_positions // window)
        self.slot_bytes = window * self.pos_words * 4
        self._v_base = window * self.k_words * 4  # byte offset of the V block in a window
        if vram_budget is None:
            self.max_slots = n_layers * self.n_windows
        else:
            self.max_slots = int(vram_budget) // self.slot_bytes
            if self.max_slots < 1:
                raise KVError(f"vram_budget={vram_budget} bytes is below one window slot "
                              f"({self.slot_bytes} bytes = {window} positions x {self.pos_words * 4} bytes); "
                              "raise the budget or lower `window`")
        self._host = [bytearray(self.n_windows * self.slot_bytes) for _ in range(n_layers)]
        self.length = [0] * n_layers  # positions committed to the host master, per layer
        # grouped K: the newest partial group in f32 (host), and the group start it holds
        self._res_row = n_kv_heads * head_dim * 4  # bytes of one position's f32 rows
        self._hres = [bytearray(self.G * self._res_row) for _ in range(n_layers)]
        self._hres_v = [bytearray(self.G * self._res_row) for _ in range(n_layers)]
        self._hres_start = [0] * n_layers
        self.requested_staging_positions = staging_positions
        self.variant = variant  # attention kernel variant ("auto": serial on CPU adapters)
        self._stage_pos_words = n_kv_heads * (self.rks + self.rvs)
        self._bind(gpu)

    # ---- GPU side -------------------------------------------------------------------------
    def _bind(self, gpu: Any) -> None:
        """(Re)create every GPU object on `gpu`; the host master is untouched."""
        limit = gpu.max_binding_bytes
        if self.slot_bytes > limit:
            raise KVError(f"a window of {self.window} positions takes {self.slot_bytes} bytes per layer, above this "
                          f"adapter's maxStorageBufferBindingSize ({limit} bytes); lower the window to at most "
                          f"{limit // (self.pos_words * 4)} positions")
        # rows appended between host syncs, all layers: as many positions as the request, or as fit one binding
        per_position = self.n_layers * (self._stage_pos_words + 2 * self.n_kv) * 4
        self.staging_positions = max(1, min(self.requested_staging_positions, (limit - ALSO_BYTES) // per_position))
        self._staging_words = self.staging_positions * self.n_layers * self._stage_pos_words
        self._staging_flags = self.staging_positions * self.n_layers * 2 * self.n_kv
        self.gpu = gpu
        self._params = ParamCache(gpu)
        self._step = StepParams(gpu)  # per-step words (positions) in buffers that keep their bind groups
        self._scatter = Scatter(gpu, self._params, self._step)
        self._store = Store(gpu, self.n_kv, self.head_dim, self.m, self._params)
        self._attn: dict[int, Attention] = {}
        self._resident: OrderedDict[tuple[int, int], Any] = OrderedDict()  # by last use, oldest first
        # host pages mirroring streamed windows of the master, and master ranges written since filled:
        # only under a VRAM budget (without one a window is streamed once, and a mirror would double the
        # host memory it takes)
        budgeted = self.max_slots < self.n_layers * self.n_windows
        self._pages: dict[tuple[int, int], Any] | None = (
            {} if budgeted and getattr(gpu, "has_host_pages", False) else None)
        self._stale: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._slots_made = 0
        self._staging = gpu.buffer((self._staging_words + self._staging_flags) * 4 + ALSO_BYTES)
        self._flags = gpu.buffer(self._staging_flags * 4)
        self._pending: list[_Pending] = []
        self._used_words = 0
        self._used_flags = 0
        self._state: Any = None
        self.streamed_windows = 0  # windows written from the host master (streaming or restore)
        self._group: GroupStore | None = None
        self._res: list[Any] = []
        if self.m.grouped:
            self._group = GroupStore(gpu, self.n_kv, self.head_dim, self._params, self.m.k)
            self._res = [gpu.upload(self._residual_words(layer)) for layer in range(self.n_layers)]
            if self.vres:  # quantises the residual's V rows (read as "K" rows of a K-only store)
                self._vrows = Store(gpu, self.n_kv, self.head_dim, Mode("v", self.m.v, self.m.v), self._params,
                                    k_only=True)
                self._noflags = gpu.buffer(self.G * self.n_kv * 4)
        self._gres_start = list(self._hres_start)

    def _residual_words(self, layer: int) -> bytes:
        """The GPU residual buffer's contents: K rows [G, n_kv, hd] f32, then V rows when V has one."""
        return bytes(self._hres[layer]) + (bytes(self._hres_v[layer]) if self.vres else b"")

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
            buf = self._resident.pop(self._victim())
        if win * self.window < self.length[layer]:
            self._stream_window(layer, win, buf)
        self._resident[key] = buf
        return buf

    def _victim(self) -> tuple[int, int]:
        """The resident window whose slot is reused: the most recently used one without unsynced rows.

        Attention walks every window of a layer in order on every call, and for a repeated walk the
        most recently used window is the one needed furthest ahead (LRU evicts each window just before
        it is needed again: with 2 slots for 8 windows it streams 8 per call, this 6 or 7). A window with rows
        still only in staging is kept, so streaming it back does not force a sync mid-step.
        """
        pending = {(e.layer, w) for e in self._pending
                   for w in range(e.pos // self.window, (e.pos + e.n - 1) // self.window + 1)}
        return next((key for key in reversed(self._resident) if key not in pending), next(reversed(self._resident)))

    def _stream_window(self, layer: int, win: int, buf: Any) -> None:
        """Window `win` of the master into the slot `buf`.

        Backends with host pages (native wgpu) keep a page per streamed window that mirrors the master
        (bytes written since it was filled are refreshed first): streaming is then a GPU copy from host
        RAM, with no host copy. Others write the master's bytes (mapped staging where available).
        """
        if self._pages is None:
            getattr(self.gpu, "write_staged", self.gpu.write)(buf, self._window_bytes(layer, win))
        else:
            self.gpu.stream(self._page(layer, win), 0, buf, 0, self.slot_bytes)
        self.streamed_windows += 1

    def _page(self, layer: int, win: int) -> Any:
        """The host page mirroring window `win` of the master, made or refreshed to match it now."""
        assert self._pages is not None
        key = (layer, win)
        page = self._pages.get(key)
        stale = self._stale.pop(key, None)
        if page is None:
            page = self._pages[key] = self.gpu.host_page(self.slot_bytes)
            stale = [(0, self.slot_bytes)]
        data = self._window_bytes(layer, win)
        for lo, hi in stale or ():
            self.gpu.fill_page(page, data[lo:hi], lo)
        return page

    def _mark_stale(self, layer: int, at: int, nbytes: int) -> None:
        """Master bytes [at, at+nbytes) of `layer` changed: its window's host page (if any) must refresh
        them before streaming. One hull per block (K, V) of the window keeps the bookkeeping O(1)."""
        win, lo = divmod(at, self.slot_bytes)
        key = (layer, win)
        if self._pages is None or key not in self._pages:
            return
        hulls = self._stale.setdefault(key, [])
        for i, (a, b) in enumerate(hulls):
            if (a < self._v_base) == (lo < self._v_base):  # same block: widen its hull
                hulls[i] = (min(a, lo), max(b, lo + nbytes))
                return
        hulls.append((lo, lo + nbytes))

    def append(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int) -> None:
        """Store rows [pos, pos+n) from GPU buffers k_buf/v_buf ([n, n_kv, hd] f32) into the cache."""
        self._check_range(layer, pos, n)
        if self.m.grouped and pos - pos % self.G != self._gres_start[layer]:
            self._restart_residual(layer, pos)
        for start in range(0, n, self.staging_positions):
            self._append_chunk(layer, k_buf, v_buf, pos + start, min(self.staging_positions, n - start), start)

    def _append_chunk(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int, src_pos: int) -> None:
        if self._used_words + n * self._stage_pos_words > self._staging_words:
            self.sync_host()
        entry = self._new_entry(layer, pos, n)
        self._store.record(k_buf, v_buf, n, self._staging, entry.word, self._flags, entry.flag, src_pos)
        v_src = (entry.word + n * self.n_kv * self.rks) * 4
        p = pos
        while p < pos + n:
            win = p // self.window
            end = min(pos + n, (win + 1) * self.window)
            slot = self._slot(layer, win, entry)
            row = p - win * self.window
            # one dispatch in the compute pass (a buffer copy would end the pass): K and V rows -> slot
            n_v = 0 if self.vres else (end - p) * self.v_words
            n_k = 0 if self.m.grouped else (end - p) * self.k_words
            self._scatter.record(self._staging, entry.word + (p - pos) * self.k_words, n_k,
                                 v_src // 4 + (p - pos) * self.v_words, n_v, slot,
                                 row * self.k_words, self.window * self.k_words + row * self.v_words)
            p = end
        if self.m.grouped:
            self._append_residual(layer, entry)

    def _new_entry(self, layer: int, pos: int, n: int) -> _Pending:
        """Book rows [pos, pos+n) of `layer` into the staging area (the store kernel writes them there)."""
        entry = _Pending(layer, pos, n, self._used_words, self._used_flags)
        self._pending.append(entry)
        self._used_words += n * self._stage_pos_words
        self._used_flags += 2 * n * self.n_kv
        return entry

    # ---- replaying a recorded step --------------------------------------------------------
    def step_key(self, pos: int, n: int, n_heads: int) -> tuple | None:
        """What decides the dispatches of a step that appends [pos, pos+n) in every layer and attends,
        when a recording of it may be replayed with only the step's parameters rewritten (`prepare`):
        equal keys, equal dispatch lists. None when the step may do more than record dispatches
        (grouped modes, a VRAM budget, rows not synced, a window slot still to be made)."""
        if self.m.grouped or n != 1 or self._pending or self.max_slots < self.n_layers * self.n_windows:
            return None
        win = pos // self.window
        if not all((layer, win) in self._resident for layer in range(self.n_layers)):
            return None  # the step makes a slot (without a budget nothing is evicted: earlier ones exist)
        att = self._attention(n_heads)
        return win, tuple(att.fold_shape(w) for w in att.pieces(self._windows(0, pos + n)[1], n))

    def replay_appends(self, pos: int, n: int) -> None:
        """The bookkeeping `append` does for [pos, pos+n) in every layer, for a replayed step (whose
        taped dispatches write the rows): the same staging entries, in the same order."""
        for layer in range(self.n_layers):
            self._check_range(layer, pos, n)
            self._new_entry(layer, pos, n)

    def _append_residual(self, layer: int, e: _Pending) -> None:
        """Copy the entry's f32 K rows into the residual; quantise every group they fill."""
        assert self._group is not None
        rb = self.n_kv * self.head_dim * 4  # bytes of one position's f32 K rows
        p = e.pos
        while p < e.pos + e.n:
            g0 = p - p % self.G
            end = min(e.pos + e.n, g0 + self.G)
            self.gpu.copy(self._staging, e.word * 4 + (p - e.pos) * rb, self._res[layer], (p - g0) * rb, (end - p) * rb)
            if self.vres:
                v_src = (e.word + e.n * self.n_kv * self.rks) * 4 + (p - e.pos) * rb
                self.gpu.copy(self._staging, v_src, self._res[layer], (self.G + p - g0) * rb, (end - p) * rb)
            if end == g0 + self.G:
                win = g0 // self.window
                slot = self._slot(layer, win, e)
                self._group.record(self._res[layer], 0, slot, (g0 - win * self.window) * self.k_words)
                if self.vres:
                    self._vrows.record(self._res[layer], self._res[layer], self.G, slot,
                                       self.window * self.k_words + (g0 - win * self.window) * self.v_words,
                                       self._noflags, 0, src_pos=self.G)
                self._gres_start[layer] = end
            p = end

    def _restart_residual(self, layer: int, pos: int) -> None:
        """Appending into group pos // self.G, not the one in the residual (a rewind, or after restore)."""
        self.sync_host()
        g0 = pos - pos % self.G
        if g0 != self._hres_start[layer]:
            if g0 > self._hres_start[layer]:
                raise KVError(f"layer {layer}: append at position {pos} skips positions "
                              f"{self._hres_start[layer]}..{g0 - 1} of a grouped-K cache; append in order")
            self._hres[layer][:] = self._decode_rows(self._rows(layer, "k", g0, g0 + self.G), self.G, self.m.kf)
            if self.vres:
                self._hres_v[layer][:] = self._decode_rows(self._rows(layer, "v", g0, g0 + self.G), self.G, self.m.vf)
            self._hres_start[layer] = g0
        self.gpu.write(self._res[layer], self._residual_words(layer))
        self._gres_start[layer] = g0

    def sync_host(self, also: tuple[Any, int] | None = None) -> bytes:
        """One readback of every row appended since the last sync into the host master.

        also=(buffer, nbytes), nbytes <= ALSO_BYTES: the first nbytes of `buffer` come back in the same
        readback and are returned (the engine's sampled token: one GPU round trip per step, not two).
        """
        if also is not None and not 0 < also[1] <= ALSO_BYTES:
            raise KVError(f"sync_host(also=...) carries 1..{ALSO_BYTES} bytes, got {also[1]}")
        if not self._pending:
            return self.gpu.read(also[0], also[1]) if also is not None else b""
        pending, self._pending = self._pending, []
        used_words, used_flags = self._used_words, self._used_flags
        self._used_words = self._used_flags = 0
        self.gpu.copy(self._flags, 0, self._staging, used_words * 4, used_flags * 4)
        tail = (used_words + used_flags) * 4
        if also is not None:
            self.gpu.copy(also[0], 0, self._staging, tail, round_up(also[1], 4))
        raw = self.gpu.read(self._staging, tail + (round_up(also[1], 4) if also is not None else 0))
        extra = raw[tail: tail + also[1]] if also is not None else b""
        data, flags = memoryview(raw)[: used_words * 4], memoryview(raw)[used_words * 4: tail].cast("I")
        for e in pending:  # validate everything before committing anything
            f = flags[e.flag: e.flag + 2 * e.n * self.n_kv]
            if f.tobytes().count(0) != f.nbytes:
                i = next(j for j, word in enumerate(f) if word)
                kind, row = ("K", i) if i < e.n * self.n_kv else ("V", i - e.n * self.n_kv)
                why = "a NaN/inf value" if f[i] == 1 else "a magnitude beyond the format's f16 scale"
                raise NonFiniteKVError(
                    f"layer {e.layer} position {e.pos + row // self.n_kv} {kind} head {row % self.n_kv}: "
                    f"{why}; the rows appended since the last sync were not cached"
                )
        for e in pending:
            kn = e.n * self.n_kv * self.rks
            k_rows = data[e.word * 4: (e.word + kn) * 4]
            v_rows = data[(e.word + kn) * 4: (e.word + e.n * self._stage_pos_words) * 4]
            self._put_host(e.layer, e.pos, e.n, k_rows, v_rows)
        return extra

    def attend(self, layer: int, q_buf: Any, out_buf: Any, pos_base: int, n_q: int, n_heads: int) -> None:
        """out[t] = causal GQA attention of q[t] (absolute position pos_base + t) over positions <= it."""
        kv_len = pos_base + n_q
        self._check_range(layer, pos_base, n_q)
        att = self._attention(n_heads)
        need = att.state_bytes(n_q)
        if self._state is None or self._state.size < need:
            self._state = self.gpu.buffer(need)
        q_end, wins = self._windows(layer, kv_len)
        for i, desc in enumerate(att.pieces(wins, n_q)):  # parameter buffers first, so recording is not split
            att.window_params(desc, i == 0, i)
        att.call_params(pos_base, n_q)
        q = att.begin(q_buf, pos_base, n_q)
        i = 0
        for desc in wins:
            w = desc.start // self.window
            win = self._window(layer, w, self._slot(layer, w), q_end, residual=desc.residual)
            for piece in att.pieces([win], n_q):
                att.fold_window(q, self._state, pos_base, n_q, piece, i == 0, i)
                i += 1
        att.finish(self._state, out_buf, pos_base, n_q)

    def _windows(self, layer: int, kv_len: int) -> tuple[int, list[Window]]:
        """(q_end, descriptors of the windows attention folds over [0, kv_len)); slots as resident now."""
        # grouped K: positions from the residual's group start on are f32 rows in the residual buffer
        q_end = min(kv_len, self._gres_start[layer]) if self.m.grouped else kv_len
        n_win = -(-q_end // self.window)
        wins = [self._window(layer, w, self._resident.get((layer, w)), q_end) for w in range(n_win)]
        if q_end < kv_len:
            wins.append(self._window(layer, q_end // self.window, self._resident.get((layer, q_end // self.window)),
                                     q_end, residual=True))
        return q_end, wins

    def prepare(self, pos: int, n: int, n_heads: int) -> None:
        """Before recording a step that appends [pos, pos+n) and attends from pos in every layer: write
        its per-step parameters now, so recording the step writes nothing and stays one compute pass.

        Optional: without it the same writes happen during recording (correct, one more submit each).
        """
        self._check_range(0, pos, n)
        row = pos % self.window  # where the first window piece of every layer's append lands
        self._scatter.dst_words(row * self.k_words, self.window * self.k_words + row * self.v_words)
        att = self._attention(n_heads)
        _, wins = self._windows(0, pos + n)
        for i, desc in enumerate(att.pieces(wins, n)):
            att.window_params(desc, i == 0, i)
        att.call_params(pos, n)

    def _window(self, layer: int, w: int, slot: Any, q_end: int, residual: bool = False) -> Window:
        lo = w * self.window
        if residual and self.vres:  # K and V rows from the residual buffer (row 0 = q_end)
            res = self._res[layer]
            return Window(res, res, q_end, q_end + self.G, q_end, 0, self.G * self.n_kv * self.head_dim, True)
        if residual:  # K rows from the residual buffer (row 0 = q_end), V rows from the slot
            v_off = self.window * self.k_words + (q_end - lo) * self.v_words
            return Window(self._res[layer], slot, q_end, q_end + self.G, q_end, 0, v_off, True)
        return Window(slot, slot, lo, min(lo + self.window, q_end), lo, 0, self.window * self.k_words)

    def _attention(self, n_heads: int) -> Attention:
        att = self._attn.get(n_heads)
        if att is None:
            if n_heads % self.n_kv:
                raise KVError(f"n_heads={n_heads} is not a multiple of the cache's n_kv_heads={self.n_kv}")
            att = self._attn[n_heads] = Attention(self.gpu, n_heads, self.n_kv, self.head_dim, self.m,
                                                   params=self._params, variant=self.variant, step=self._step)
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
    def _window_bytes(self, layer: int, win: int) -> memoryview:
        """Window `win` of the master, laid out as its GPU slot (K block, then V block)."""
        return memoryview(self._host[layer])[win * self.slot_bytes: (win + 1) * self.slot_bytes]

    def _runs(self, kind: str, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """(master byte offset, first position, end position, row bytes) of each window's piece of [start, end)."""
        row = (self.k_words if kind == "k" else self.v_words) * 4
        base = 0 if kind == "k" else self.window * self.k_words * 4
        p = start
        while p < end:
            win, r = divmod(p, self.window)
            stop = min(end, (win + 1) * self.window)
            yield win * self.slot_bytes + base + r * row, p, stop, row
            p = stop

    def _put_rows(self, layer: int, kind: str, pos: int, rows: Any) -> None:
        """Stored rows of `kind` ("k" or "v") for positions pos.. (bytes, position-major) into the master."""
        src = memoryview(rows).cast("B")
        host = self._host[layer]
        n = src.nbytes // ((self.k_words if kind == "k" else self.v_words) * 4)
        for at, p, stop, row in self._runs(kind, pos, pos + n):
            host[at: at + (stop - p) * row] = src[(p - pos) * row: (stop - pos) * row]
            if self._pages:
                self._mark_stale(layer, at, (stop - p) * row)

    def _rows(self, layer: int, kind: str, start: int, end: int) -> bytes:
        """The master's stored rows of `kind` for positions [start, end), position-major."""
        host = self._host[layer]
        return b"".join(host[at: at + (stop - p) * row] for at, p, stop, row in self._runs(kind, start, end))

    def _put_host(self, layer: int, pos: int, n: int, k_rows: Any, v_rows: Any) -> None:
        """Rows of positions [pos, pos+n) as the store kernel wrote them (K, V bytes) into the master."""
        if not self.vres:
            self._put_rows(layer, "v", pos, v_rows)
        if not self.m.grouped:
            self._put_rows(layer, "k", pos, k_rows)
        else:  # f32 K rows: into the residual; every group they fill is quantised into the master
            kb, vb, rb = memoryview(k_rows).cast("B"), memoryview(v_rows).cast("B"), self._res_row
            p = pos
            while p < pos + n:
                g0 = p - p % self.G
                end = min(pos + n, g0 + self.G)
                if g0 != self._hres_start[layer]:
                    raise KVError(f"layer {layer}: rows for position {p} reached the master out of order")
                self._hres[layer][(p - g0) * rb: (end - g0) * rb] = kb[(p - pos) * rb: (end - pos) * rb]
                if self.vres:
                    self._hres_v[layer][(p - g0) * rb: (end - g0) * rb] = vb[(p - pos) * rb: (end - pos) * rb]
                if end == g0 + self.G:
                    k_words = self._encode_rows(bytes(self._hres[layer]), self.G, self.m.kf, f"layer {layer} K")
                    self._put_rows(layer, "k", g0, k_words)
                    self._hres[layer][:] = bytes(len(self._hres[layer]))
                    if self.vres:
                        v_words = self._encode_rows(bytes(self._hres_v[layer]), self.G, self.m.vf, f"layer {layer} V")
                        self._put_rows(layer, "v", g0, v_words)
                        self._hres_v[layer][:] = bytes(len(self._hres_v[layer]))
                    self._hres_start[layer] = end
                p = end
        self.length[layer] = max(self.length[layer], pos + n)

    def _encode_rows(self, f32_rows: bytes, n: int, fmt: RowFormat, what: str) -> bytes:
        """f32 rows [n, n_kv, hd] -> stored rows of `fmt` (grouped modes; see `host_codec`)."""
        raise KVError(f"{what}: quantising {fmt.name} rows on the host needs numpy (NumpyKVCache)")

    def _decode_rows(self, rows: bytes, n: int, fmt: RowFormat) -> bytes:
        """Stored rows [n, n_kv, row words of `fmt`] -> the f32 values attention reads (grouped modes)."""
        raise KVError(f"dequantising {fmt.name} rows on the host needs numpy (NumpyKVCache)")

    def bytes_per_position(self) -> int:
        """GPU bytes one position takes in one layer (K and V), measured on an actual slot buffer.

        Grouped-K modes also hold one f32 residual buffer per layer (`residual_bytes`), a fixed cost.
        """
        buf = next(iter(self._resident.values()), None)
        if buf is None:
            buf = self.gpu.buffer(self.slot_bytes)
        return int(buf.size) // self.window

    def residual_bytes(self) -> int:
        """GPU bytes of one layer's f32 residual buffer (0 unless the mode groups K)."""
        return int(self._res[0].size) if self._res else 0

    def _check_range(self, layer: int, pos: int, n: int) -> None:
        if not 0 <= layer < self.n_layers:
            raise KVError(f"layer {layer} out of range (cache has {self.n_layers} layers)")
        if n < 1 or pos < 0 or pos + n > self.max_positions:
            raise KVError(f"positions [{pos}, {pos + n}) outside the cache (max_positions={self.max_positions})")
