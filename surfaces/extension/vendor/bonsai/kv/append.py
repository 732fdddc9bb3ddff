"""Recording appended rows: the staging entry, the store kernel (or a QKV matmul's epilogue, `epilogue_rows`),
the copy into window slots and the grouped modes' residual (`KVCache.append` orders it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .epilogue import EpilogueRows
from .errors import KVError
from .layout import Kind, Layout
from .mirrors import Mirrors
from .residual import RESIDUAL_ROLE, Residual
from .slots import Slots
from .staging import Entry, Staging
from .store.scatter import Scatter
from .store.store import Store

# A V-residual mode's batch (q4res) leaves on the GPU the f32 rows of the groups it completes, which reach the host
# quantised; the host reads only the rows after them (`Entry.skip`). False: they are read back and dropped there
# (commit 4dd3ef3: a 512-token prompt of the default model read 27.3 MB for the 3.7 MB the host keeps; `bench/probes/prefill_ab.py --switch drop-rows`).
DROP_QUANTISED_ROWS = True


def dropped_rows(layout: Layout, pos: int, runs: list[tuple[int, int]]) -> int:
    """How many of a batch's rows from `pos` stay on the GPU: those of the groups it completes (`runs`), where the
    host keeps no f32 row of them (a V residual: K and V reach it quantised; kc4*'s V rows are kept as stored)."""
    return runs[-1][1] - pos if DROP_QUANTISED_ROWS and runs and layout.mode.v_residual else 0


class Appender:
    """The parts of one device's cache that appending rows records into."""

    def __init__(self, layout: Layout, staging: Staging, store: Store, scatter: Scatter, slots: Slots,
                 mirrors: Mirrors, residual: Residual | None, sync_host: Callable[[], Any],
                 unsynced: Callable[[int], bool]) -> None:
        self.layout, self.staging, self.store, self.scatter = layout, staging, store, scatter
        self.slots, self.mirrors, self.residual, self.sync_host = slots, mirrors, residual, sync_host
        self.unsynced = unsynced  # layer -> whether rows of it were staged or parked since the last sync

    def append(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int, fuse: bool,
               stored: EpilogueRows | None) -> None:
        """`KVCache.append` (range checked); fuse: `KVCache.fuse_store`."""
        if stored is not None:
            if (stored.entry.layer, stored.entry.pos, stored.entry.n) != (layer, pos, n):
                raise KVError(f"append(stored=...): rows booked for layer {stored.entry.layer} position "
                              f"{stored.entry.pos}, appended as layer {layer} position {pos}")
            self._after_store(layer, pos, n, stored.entry, copied=True)
            return
        self._restart_residual(layer, pos)
        if self.residual is not None and n > 1 and self.slots.all_resident:
            self._append_batch(layer, k_buf, v_buf, pos, n)
            return
        # chunks that fit the staging area; grouped modes also end a chunk where a K group ends, so each
        # staging entry lies in one group and the group's quantised rows are booked right after it
        start = 0
        while start < n:
            p = pos + start
            stop = min(n, start + self.staging.positions)
            if self.residual is not None:
                stop = min(stop, start + self.layout.group - p % self.layout.group)
            self._append_chunk(layer, k_buf, v_buf, p, stop - start, start, fuse)
            start = stop

    def epilogue_rows(self, layer: int, pos: int, n: int, fuse: bool) -> EpilogueRows | None:
        """`KVCache.epilogue_rows` (range checked)."""
        if not self._copies_twice(pos, n, fuse):
            return None
        self._restart_residual(layer, pos)
        entry = self._book(layer, pos, n)
        dst, words = self._also(layer, pos, entry)
        stg = self.staging
        return EpilogueRows(entry, stg.buffer, entry.word, stg.flags, entry.flag, stg.scratch, dst, words,
                            self.store.k_limit, self.store.v_limit)

    def _restart_residual(self, layer: int, pos: int) -> None:
        res = self.residual
        if res is not None and pos - pos % self.layout.group != res.gpu_start[layer]:
            # the host's copy of this layer must be current; other layers' rows may wait (a prompt fed
            # again would otherwise read back the layers before it, a GPU round trip per layer)
            if self.unsynced(layer):
                self.sync_host()
            res.restart(layer, pos, self.slots.get(layer, pos // self.layout.window))

    def _book(self, layer: int, pos: int, n: int) -> Entry:
        """The staging entry of rows [pos, pos+n) (a sync first when staging has no room for them)."""
        lay, stg = self.layout, self.staging
        group_words = (lay.group + n) * (lay.k_words + lay.v_words) if self.residual is not None else 0
        if not stg.room_for(n * (lay.stored_k_words + lay.stored_v_words) + group_words, 2 * n * lay.n_kv):
            self.sync_host()
        return stg.book_rows(layer, pos, n)

    def _copies_twice(self, pos: int, n: int, fuse: bool) -> bool:
        """f32 rows of positions [pos, pos+n) in one window: the store kernel (or for one position the QKV
        epilogue) also writes them where the scatter would copy them (the slot, or for K and V both grouped the
        residual: a chunk lies in one group there), one dispatch instead of two. Their rows lie back to back in
        both places, as the store kernel's second copy writes them."""
        mode, window = self.layout.mode, self.layout.window
        return (fuse and self.store.f32_rows and (not mode.grouped or mode.v_residual)
                and pos // window == (pos + n - 1) // window)

    def _also(self, layer: int, pos: int, entry: Entry) -> tuple[Any, Any]:
        """(buffer, step-parameter words) of that second copy of the rows from `pos` (its K and V rows start there)."""
        lay, res = self.layout, self.residual
        if res is None:
            return (self.slots.get(layer, pos // lay.window, entry),
                    self.scatter.dst_words(lay.slot_word(Kind.K, pos), lay.slot_word(Kind.V, pos)))
        return res.bufs[layer], self.scatter.dst_words(*res.dst_words(pos), role=RESIDUAL_ROLE)

    def _append_batch(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int) -> None:
        """A grouped mode's batch: chunks that fit staging (not cut at groups), each stored by one dispatch,
        the groups it completes booked before its rows and quantised a window at a time (`Residual.record_batch`).
        Every window keeps its slot (no VRAM budget): the chunk's slots are resolved before anything is booked."""
        lay, stg, res = self.layout, self.staging, self.residual
        assert res is not None
        start = 0
        while start < n:
            p, m = pos + start, min(n - start, stg.positions)
            runs = res.completed_runs(p, m)
            # every slot the chunk writes, before anything is booked (making one may sync: nothing half-booked then)
            first = p - p % lay.group
            slots = {w: self.slots.get(layer, w) for w in range(first // lay.window, (p + m - 1) // lay.window + 1)}
            grouped = sum(end - s for s, end in runs) * lay.group_words
            if not stg.room_for(m * (lay.stored_k_words + lay.stored_v_words) + grouped, 2 * m * lay.n_kv):
                self.sync_host()
            outs = [stg.book_group(layer, s, end - s) for s, end in runs]
            entry = stg.book_rows(layer, p, m, skip=dropped_rows(lay, p, runs))
            self.store.record(k_buf, v_buf, m, stg.buffer, entry.word, stg.flags, entry.flag, start)
            self._to_slots(layer, p, m, entry, slots.__getitem__)
            res.record_batch(layer, entry, runs, outs, stg, slots.__getitem__)
            start += m

    def _append_chunk(self, layer: int, k_buf: Any, v_buf: Any, pos: int, n: int, src_pos: int, fuse: bool) -> None:
        stg = self.staging
        entry = self._book(layer, pos, n)
        also = self._also(layer, pos, entry) if self._copies_twice(pos, n, fuse) else None
        self.store.record(k_buf, v_buf, n, stg.buffer, entry.word, stg.flags, entry.flag, src_pos, also=also)
        self._after_store(layer, pos, n, entry, copied=also is not None)

    def _after_store(self, layer: int, pos: int, n: int, entry: Entry, copied: bool) -> None:
        """Scatter the staged rows into their slots (unless `copied` there already), mark the mirrors, and
        (grouped modes) fill the residual and quantise a group the rows complete."""
        slot = lambda w: self.slots.get(layer, w, entry)  # noqa: E731
        self._to_slots(layer, pos, n, entry, slot, copied)
        if self.residual is not None:
            self.residual.record_append(layer, entry, self.staging, slot, copied=copied)

    def _to_slots(self, layer: int, pos: int, n: int, entry: Entry, slot: Callable[[int], Any],
                  copied: bool = False) -> None:
        """The rows of `entry` that go to window slots as stored (all but grouped K and a V residual) scattered
        there, one dispatch per window in the compute pass (a buffer copy would end it); mirrors marked."""
        lay, stg = self.layout, self.staging
        grouped, v_res = lay.mode.grouped, lay.mode.v_residual
        v_src = entry.word + n * lay.stored_k_words
        p = pos
        while p < pos + n:
            win = p // lay.window
            end = min(pos + n, (win + 1) * lay.window)
            buf = slot(win)
            n_k = 0 if grouped else (end - p) * lay.k_words
            n_v = 0 if v_res else (end - p) * lay.v_words
            k_word, v_word = lay.slot_word(Kind.K, p), lay.slot_word(Kind.V, p)
            if not copied:
                self.scatter.record(stg.buffer, entry.word + (p - pos) * lay.k_words, n_k,
                                    v_src + (p - pos) * lay.v_words, n_v, buf, k_word, v_word)
            self.mirrors.mark(buf, k_word * 4, (k_word + n_k) * 4)
            self.mirrors.mark(buf, v_word * 4, (v_word + n_v) * 4)
            p = end
