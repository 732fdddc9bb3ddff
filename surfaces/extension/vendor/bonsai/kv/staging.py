"""Rows on their way from the GPU to the host master: one staging buffer, read back once per sync.

The store kernel writes every appended position's rows (and one validity flag per row) into the
staging area; grouped modes also copy each group the group kernel quantised there (a batch books the
groups it completes before its rows, so the host takes them first). `readback`
brings everything booked since the last one back in a single read, validates every row before any
is committed, and hands the rows over in booking order.

A V-residual mode's batch (q4res) stores the f32 rows of every position in staging, where the group kernel
quantises them, but the host keeps only those after the last group the batch completes (the groups reach it
quantised): an entry's `skip` leading positions stay on the GPU, and the read gathers the rest.

A long batch may start reading its first rows early (`read_ahead`, between the layers of a prompt step):
`readback` then takes those reads first, each validated and handed over before the next, so the host's
copy of the first layers' rows overlaps the GPU's work on the last ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from ..gpu.backend import PendingRead, round_up
from .errors import KVError, NonFiniteKVError
from .layout import Layout

ALSO_BYTES = 256  # room at the end of the staging buffer for `readback(also=...)`


# A sync after reads ahead records the read of the step's remaining rows and submits it before committing the reads
# ahead, so the GPU runs the step's last layers (recorded, not yet submitted) while the host commits the first ones:
# a 512-token f32 prompt step's last read had waited 1.7 ms after the last commit ahead (bench/NOTES.md, commit 33c3353).
LAST_READ_FIRST = True


class Entry(NamedTuple):
    """Rows booked into staging: `n` positions of `layer` from `pos`, K block at word `word`, then V.

    group=False: rows as the store kernel writes them, with 2 * n * n_kv flags from `flag`.
    group=True: whole groups of quantised rows copied from their slot (one or, for a batch, several: no flags).
    A named tuple, not a frozen dataclass: a replayed decode step books one per layer, and a tuple is made in
    a quarter of the time (0.25 against 0.9 us).
    """

    layer: int
    pos: int
    n: int
    word: int
    flag: int
    k_words: int  # per position
    v_words: int  # per position
    group: bool = False
    skip: int = 0  # leading positions whose rows the host does not take (`book_rows`): not read back

    @property
    def words(self) -> int:
        return self.n * (self.k_words + self.v_words)

    @property
    def kept_words(self) -> int:
        """Words of the entry read back: all but the rows of its first `skip` positions."""
        return (self.n - self.skip) * (self.k_words + self.v_words)

    def spans(self) -> list[tuple[int, int]]:
        """The staging words [start, end) read back: the whole entry, or (skip) its K and its V rows after the first
        `skip` positions."""
        if not self.skip:
            return [(self.word, self.word + self.words)]
        k_end = self.word + self.n * self.k_words
        return [(self.word + self.skip * self.k_words, k_end), (k_end + self.skip * self.v_words, self.word + self.words)]

    def kept(self) -> Entry:
        """The entry of the rows read back (positions from pos + skip)."""
        return self._replace(pos=self.pos + self.skip, n=self.n - self.skip, skip=0) if self.skip else self


Rows = tuple[Entry, memoryview, memoryview]  # an entry and its K and V rows as read back


def read_spans(entries: list[Entry], end: int) -> list[tuple[int, int]] | None:
    """The byte ranges of staging one read takes: `entries`' rows (booked back to back) as `Entry.spans`, then the
    bytes after them up to byte `end` (their flags, `also`); None where that is one range, all of it."""
    if not any(e.skip for e in entries):
        return None
    spans: list[tuple[int, int]] = []
    for start, stop in [span for e in entries for span in e.spans()] + [(entries[-1].word + entries[-1].words, end // 4)]:
        if spans and spans[-1][1] == start:
            spans[-1] = (spans[-1][0], stop)
        elif stop > start:
            spans.append((start, stop))
    return [(start * 4, (stop - start) * 4) for start, stop in spans]


class AheadRead(NamedTuple):
    """A read started by `Staging.read_ahead`: `entries`' rows as read back (`words` of them: each entry's
    `kept_words`), then their flags (the flag buffer's from `flag`), copied after the rows."""

    entries: list[Entry]
    flag: int
    words: int
    read: PendingRead


def coalesce(rows: list[Rows]) -> list[Rows]:
    """The same rows with each layer's consecutive row entries joined into one: positions that follow on
    from that layer's last entry, with no group entry of the layer between them. A grouped mode books a
    group entry when a row completes its group, so a joined entry never spans two groups (the host residual
    takes one group at a time). Every layer's order stays as it was; layers are independent.

    A GPU-resident block of 16 decode steps reads back 16 one-position entries per layer: committed one by
    one, that is 16 x 2 copies per layer in Python while the GPU waits for the next block; joined, two.
    """
    out: list[list] = []
    last: dict[int, int] = {}  # layer -> index in `out` of its latest entry, while that is a row entry
    for e, k, v in rows:
        i = last.pop(e.layer, None)
        if e.group:
            out.append([e, [k], [v]])
            continue
        if i is not None and out[i][0].pos + out[i][0].n == e.pos:
            first = out[i][0]
            out[i] = [Entry(e.layer, first.pos, first.n + e.n, first.word, first.flag, e.k_words, e.v_words),
                      [*out[i][1], k], [*out[i][2], v]]
        else:
            i = len(out)
            out.append([e, [k], [v]])
        last[e.layer] = i
    return [(e, _joined(k), _joined(v)) for e, k, v in out]


def _joined(parts: list[memoryview]) -> memoryview:
    return parts[0] if len(parts) == 1 else memoryview(b"".join(parts))


class Staging:
    """The staging and flag buffers of one device, and the entries booked since the last readback."""

    def __init__(self, gpu: Any, layout: Layout, requested_positions: int) -> None:
        self.gpu, self.layout = gpu, layout
        n_kv = layout.n_kv
        # per appended position and layer: the rows as stored, and (grouped) at most one position of a
        # quantised group (K, and V when V has a residual)
        group_words = layout.group_words
        per_position = layout.n_layers * (layout.stored_k_words + layout.stored_v_words + group_words + 2 * n_kv) * 4
        limit = gpu.max_binding_bytes
        self.positions = max(1, min(requested_positions, (limit - ALSO_BYTES - layout.group * per_position)
                                    // per_position))
        self.capacity = self.positions * layout.n_layers * (layout.stored_k_words + layout.stored_v_words + group_words)
        self.capacity += layout.group * layout.n_layers * group_words  # a group filled by the step's first row
        self.flag_capacity = self.positions * layout.n_layers * 2 * n_kv
        self.buffer = gpu.buffer((self.capacity + self.flag_capacity) * 4 + ALSO_BYTES)
        # then one scratch word per row of a position (2 * n_kv, from `scratch`): the QKV matmul's epilogue
        # sums a row's flag parts there (bonsai.ops.qkv_store); zero between dispatches
        self.scratch = self.flag_capacity
        self.flags = gpu.buffer((self.flag_capacity + 2 * n_kv) * 4)
        self.pending: list[Entry] = []  # booked and not yet handed over (reads started early included)
        self.used_words = self.used_flags = 0
        self._ahead: list[AheadRead] = []  # `read_ahead`'s reads, oldest first: they cover pending[:len(...)]
        self._read = (0, 0, 0)  # (entries, words, flags) the reads ahead cover, from the first

    def room_for(self, words: int, flags: int = 0) -> bool:
        return self.used_words + words <= self.capacity and self.used_flags + flags <= self.flag_capacity

    def book_rows(self, layer: int, pos: int, n: int, skip: int = 0) -> Entry:
        """Book rows [pos, pos+n) of `layer` as the store kernel writes them (it writes them there); the host takes
        those from pos + skip (every row's flags are read)."""
        lay = self.layout
        return self._book(Entry(layer, pos, n, self.used_words, self.used_flags, lay.stored_k_words,
                                lay.stored_v_words, skip=skip), 2 * n * lay.n_kv)

    def book_layers(self, layers: int, pos: int, n: int) -> None:
        """`book_rows(layer, pos, n)` for layers 0 .. layers-1 in order (a replayed step's bookkeeping), the room
        for all of them checked once: nothing is booked if it is not there."""
        lay = self.layout
        k_words, v_words = lay.stored_k_words, lay.stored_v_words
        words, flags = n * (k_words + v_words), 2 * n * lay.n_kv
        self._need_room(layers * words, layers * flags)
        word, flag = self.used_words, self.used_flags
        self.pending += [Entry(layer, pos, n, word + layer * words, flag + layer * flags, k_words, v_words)
                         for layer in range(layers)]
        self.used_words, self.used_flags = word + layers * words, flag + layers * flags

    def book_group(self, layer: int, g0: int, n: int | None = None) -> Entry:
        """Book the quantised rows of the group starting at g0 (n positions: that many groups' from g0, within one
        window; default one group), copied from its slot by the caller."""
        lay = self.layout
        return self._book(Entry(layer, g0, lay.group if n is None else n, self.used_words, self.used_flags, lay.k_words,
                                lay.group_v_words, True), 0)

    def _need_room(self, words: int, flags: int) -> None:
        if not self.room_for(words, flags):
            raise KVError(f"staging area full ({self.used_words} of {self.capacity} words): sync the host first")

    def _book(self, entry: Entry, flags: int) -> Entry:
        self._need_room(entry.words, flags)
        self.pending.append(entry)
        self.used_words += entry.words
        self.used_flags += flags
        return entry

    def read_ahead(self) -> bool:
        """Start reading the rows booked since the last read began (their dispatches are recorded) while later
        ones are recorded: their flags are copied after them in staging, and one read brings both (`read_queued`,
        or `read_gathered` of the rows the host keeps; its copy is recorded now: the rows booked next overwrite
        those words only after it; it goes with the caller's next submit). `readback` takes these reads first.
        False: nothing new to read (nothing recorded)."""
        n_read, w0, f0 = self._read
        if len(self.pending) == n_read:
            return False
        entries = self.pending[n_read:]
        flags = self._flags_after_rows(f0, self.used_words, self.used_flags)
        nbytes = (self.used_words - w0 + flags) * 4
        spans, words = self._read_extent(entries, w0, self.used_words, nbytes)
        self._ahead.append(AheadRead(entries, f0, words, self._queue_read(spans, w0, nbytes)))
        self._read = (len(self.pending), self.used_words, self.used_flags)
        return True

    def readback(self, also: tuple[Any, int] | None, commit: Callable[[list[Rows]], None]) -> bytes:
        """One read of everything booked (after the reads `read_ahead` started, taken first): `commit` gets
        [(entry, K rows, V rows)] in booking order, views of the read-back memory valid only inside that
        call (no copy of a prompt's rows on the way), once per read; returns the `also` bytes.

        Raises NonFiniteKVError naming the first flagged row; `commit` is not called for its read nor any
        after it (a read ahead's rows before it may have been handed over: the caller does not rely on any
        position of the refused step, `bonsai.engine`).
        """
        if also is not None and not 0 < also[1] <= ALSO_BYTES:
            raise KVError(f"sync_host(also=...) carries 1..{ALSO_BYTES} bytes, got {also[1]}")
        ahead, (n_read, w0, f0) = self._ahead, self._read
        pending = self.pending[n_read:]
        used_words, used_flags = self.used_words, self.used_flags
        self.pending, self._ahead, self._read = [], [], (0, 0, 0)
        self.used_words = self.used_flags = 0
        words = flags = tail = nbytes = 0
        last: PendingRead | None = None  # the read of the rows after the reads ahead, submitted before those are committed
        spans = None
        if pending:
            flags = self._flags_after_rows(f0, used_words, used_flags)
            nbytes = (used_words - w0 + flags) * 4 + (round_up(also[1], 4) if also is not None else 0)  # of staging
            if also is not None:
                self.gpu.copy(also[0], 0, self.buffer, used_words * 4 + flags * 4, round_up(also[1], 4))
            spans, words = self._read_extent(pending, w0, used_words, nbytes)
            tail = (words + flags) * 4  # of the bytes read
            if ahead and LAST_READ_FIRST:  # submitted now: the GPU runs the step's last layers during the commits
                last = self._queue_read(spans, w0, nbytes)
                self.gpu.flush()
        for i, a in enumerate(ahead):
            try:
                a.read.result(partial(self._commit_read, commit, a))
            except BaseException:
                for rest in [r.read for r in ahead[i + 1:]] + ([last] if last is not None else []):
                    with contextlib.suppress(Exception):  # hand their readback buffers back; nothing is committed
                        rest.result(lambda raw: None)
                raise
        if not pending:  # nothing booked, or everything read ahead
            commit([])
            return self.gpu.read(also[0], also[1]) if also is not None else b""

        def take(raw: memoryview) -> bytes:
            raw = raw.cast("B")
            commit(self._read_rows(pending, raw[:tail], f0, words))
            return bytes(raw[tail: tail + also[1]]) if also is not None else b""

        if last is not None:
            return last.result(take)
        if spans is not None:
            return self.gpu.read_gathered(self.buffer, spans).result(take)
        return self.gpu.read_with(self.buffer, nbytes, take, w0 * 4)

    @staticmethod
    def _read_extent(entries: list[Entry], w0: int, used_words: int, nbytes: int) -> tuple[list[tuple[int, int]] | None, int]:
        """(`read_spans`, words of rows read back) of a read of `entries`, booked from word w0 up to used_words, and
        the `nbytes` of staging after w0 it covers (their flags and `also` too): all the words where nothing is
        dropped, else each entry's `kept_words`."""
        spans = read_spans(entries, w0 * 4 + nbytes)
        return spans, used_words - w0 if spans is None else sum(e.kept_words for e in entries)

    def _queue_read(self, spans: list[tuple[int, int]] | None, w0: int, nbytes: int) -> PendingRead:
        """`read_queued` of `nbytes` of staging from word w0 (rows, then their flags and `also`), or (`read_spans`
        found rows the host drops) `read_gathered` of `spans`."""
        if spans is None:
            return self.gpu.read_queued(self.buffer, nbytes, w0 * 4)
        return self.gpu.read_gathered(self.buffer, spans)

    def _flags_after_rows(self, flag: int, used_words: int, used_flags: int) -> int:
        """Record copying flags [flag, used_flags) into staging just after the rows booked (from word used_words),
        where one read takes both; their count."""
        flags = used_flags - flag
        if flags:
            self.gpu.copy(self.flags, flag * 4, self.buffer, used_words * 4, flags * 4)
        return flags

    def _commit_read(self, commit: Callable[[list[Rows]], None], a: AheadRead, raw: memoryview) -> None:
        commit(self._read_rows(a.entries, raw, a.flag, a.words))

    def _read_rows(self, pending: list[Entry], raw: memoryview, flag: int, words: int) -> list[Rows]:
        """`rows` of a read of `pending`'s rows: `words` words of them (`Entry.kept_words`), then their flags (from
        `flag`)."""
        raw = raw.cast("B")
        return self.rows(pending, raw[: words * 4], raw[words * 4:].cast("I"), flag)

    def take(self) -> tuple[list[Entry], int, int]:
        """(entries, words, flags) booked since the last readback, which the caller moves elsewhere on the
        GPU (`Handover.park`); staging is empty afterwards."""
        if self._ahead:
            raise KVError("staging: rows are being read ahead (a batch's); sync the host before parking a step")
        pending, used = self.pending, (self.used_words, self.used_flags)
        if any(e.skip for e in pending):  # parked steps are read whole (a decode step's entries have no skip)
            pending = [e._replace(skip=0) for e in pending]
        self.pending, self.used_words, self.used_flags = [], 0, 0
        return pending, *used

    def rows(self, pending: list[Entry], data: memoryview, flags: memoryview, flag: int = 0) -> list[Rows]:
        """[(entry, K rows, V rows)] of `pending` (booked back to back) from the words read back, `data` (each
        entry's `kept_words`), and their `flags` as read back (staging's from flag `flag`); every flag is checked
        before anything is returned (NonFiniteKVError). An entry with `skip` comes back as `Entry.kept`."""
        for e in pending:  # validate everything before committing anything
            if not e.group:
                self._check_flags(e, flags[e.flag - flag: e.flag - flag + 2 * e.n * self.layout.n_kv])
        out = []
        start = 0
        for e in pending:
            e = e.kept()
            k_end = start + e.n * e.k_words * 4
            out.append((e, data[start: k_end], data[k_end: start + e.words * 4]))
            start += e.words * 4
        return out

    def _check_flags(self, e: Entry, f: memoryview) -> None:
        if f.tobytes().count(0) == f.nbytes:
            return
        n_kv = self.layout.n_kv
        i = next(j for j, word in enumerate(f) if word)
        kind, row = ("K", i) if i < e.n * n_kv else ("V", i - e.n * n_kv)
        why = "a NaN/inf value" if f[i] == 1 else "a magnitude beyond the format's f16 scale"
        raise NonFiniteKVError(f"layer {e.layer} position {e.pos + row // n_kv} {kind} head {row % n_kv}: {why}; "
                               "the rows appended since the last sync were not cached")
