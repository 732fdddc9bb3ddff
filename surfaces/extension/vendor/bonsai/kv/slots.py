"""Window slots on the GPU: which windows of the master are resident, and streaming one in.

Without a VRAM budget every window gets its own slot and is streamed at most once (after a device
loss). Under a budget a full pool reuses the slot of the most recently used window without rows
still in staging, and backends with host pages keep a host-RAM page per streamed window that mirrors
the master, so streaming is one GPU copy from host RAM (refreshed first where the master changed).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .errors import KVError
from .layout import Layout
from .master import HostMaster
from .staging import Entry


class Slots:
    """The resident windows of one device (by last use, oldest first) and their host pages."""

    @staticmethod
    def count(layout: Layout, vram_budget: int | None) -> int:
        """How many window slots a VRAM budget (bytes; None: no budget) holds: every window, without one."""
        if vram_budget is None:
            return layout.n_layers * layout.n_windows
        slots = int(vram_budget) // layout.slot_bytes
        if slots < 1:
            raise KVError(f"vram_budget={vram_budget} bytes is below one window slot ({layout.slot_bytes} bytes = "
                          f"{layout.window} positions x {layout.slot_bytes // layout.window} bytes); raise the "
                          "budget or lower `window`")
        return slots

    def __init__(self, gpu: Any, layout: Layout, master: HostMaster, max_slots: int,
                 pending: Callable[[], list[Entry]], sync: Callable[[], Any], rewritten: Callable[[Any], None]) -> None:
        self.gpu, self.layout, self.master, self.max_slots = gpu, layout, master, max_slots
        self._pending, self._sync, self._rewritten = pending, sync, rewritten
        self.resident: OrderedDict[tuple[int, int], Any] = OrderedDict()
        # host pages only under a budget: without one a window is streamed once, and a mirror would
        # double the host memory it takes
        budgeted = max_slots < layout.n_layers * layout.n_windows
        self._pages: dict[tuple[int, int], Any] | None = {} if budgeted and gpu.has_host_pages else None
        self._stale: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._made = 0
        self.streamed = 0  # windows written from the host master (streaming or restore)

    @property
    def all_resident(self) -> bool:
        """No budget: every window has (or will get) its own slot, nothing is ever evicted."""
        return self.max_slots >= self.layout.n_layers * self.layout.n_windows

    def get(self, layer: int, win: int, current: Entry | None = None) -> Any:
        """The buffer holding window `win` of `layer`, streamed in from the master if needed.

        `current` is the append being recorded (its own rows are copied in by the caller).
        """
        key = (layer, win)
        buf = self.resident.get(key)
        if buf is not None:
            self.resident.move_to_end(key)
            return buf
        lo, hi = win * self.layout.window, (win + 1) * self.layout.window
        if any(e is not current and e.layer == layer and e.pos < hi and e.pos + e.n > lo for e in self._pending()):
            self._sync()  # rows of this window are only in staging: bring the master up to date
        if self._made < self.max_slots:
            buf = self.gpu.buffer(self.layout.slot_bytes)
            self._made += 1
        else:
            buf = self.resident.pop(self._victim())
        if lo < self.master.length[layer]:
            self._stream(layer, win, buf)
        self._rewritten(buf)  # streamed, or a reused slot's old rows: every byte may differ from its mirror
        self.resident[key] = buf
        return buf

    def _victim(self) -> tuple[int, int]:
        """The resident window whose slot is reused: the most recently used one without unsynced rows.

        Attention walks every window of a layer in order on every call, and for a repeated walk the
        most recently used window is the one needed furthest ahead (LRU evicts each window just before
        it is needed again: with 2 slots for 8 windows it streams 8 per call, this 6 or 7). A window with
        rows still only in staging is kept, so streaming it back does not force a sync mid-step.
        """
        w = self.layout.window
        pending = {(e.layer, win) for e in self._pending() for win in range(e.pos // w, (e.pos + e.n - 1) // w + 1)}
        return next((key for key in reversed(self.resident) if key not in pending), next(reversed(self.resident)))

    def _stream(self, layer: int, win: int, buf: Any) -> None:
        """Window `win` of the master into the slot `buf` (from its host page where the backend has them)."""
        if self._pages is None:
            self.gpu.write_staged(buf, self.master.window(layer, win))
        else:
            self.gpu.stream(self._page(layer, win), 0, buf, 0, self.layout.slot_bytes)
        self.streamed += 1

    def _page(self, layer: int, win: int) -> Any:
        """The host page mirroring window `win` of the master, made or refreshed to match it now."""
        assert self._pages is not None
        key = (layer, win)
        page = self._pages.get(key)
        stale = self._stale.pop(key, None)
        if page is None:
            page = self._pages[key] = self.gpu.host_page(self.layout.slot_bytes)
            stale = [(0, self.layout.slot_bytes)]
        data = self.master.window(layer, win)
        for lo, hi in stale or ():
            self.gpu.fill_page(page, data[lo:hi], lo)
        return page

    def mark_stale(self, layer: int, changed: list[tuple[int, int]]) -> None:
        """Master bytes of `layer` changed ((offset, count) ranges): a window's host page must refresh them
        before streaming. One hull per block (K, V) of the window keeps the bookkeeping O(1)."""
        if not self._pages:
            return
        for at, nbytes in changed:
            win, lo = divmod(at, self.layout.slot_bytes)
            key = (layer, win)
            if key not in self._pages:
                continue
            hulls = self._stale.setdefault(key, [])
            v_base = self.layout.v_block
            for i, (a, b) in enumerate(hulls):
                if (a < v_base) == (lo < v_base):  # same block: widen its hull
                    hulls[i] = (min(a, lo), max(b, lo + nbytes))
                    break
            else:
                hulls.append((lo, lo + nbytes))
