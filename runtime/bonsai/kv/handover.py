"""Decode steps' staged rows parked on the GPU until the host takes them, several steps per readback.

A GPU-resident decode loop reads nothing back between steps. After each step the rows (and flags)
the store kernel staged are copied, by two scatter dispatches, into the handover buffer, and staging
is empty again, so the next step books the same staging words as the last one and its taped
dispatches can be replayed. Every `steps` steps one read brings all parked steps back (with a few
extra bytes: the loop's tokens) and their rows reach the host master in booking order.

Layout: every step's flags in a fixed-size slot from word 0, then the steps' rows one after the other
from word `rows_at`, each step's at the end of the last one's. A slot sized for the worst case (a
step that fills a grouped mode's group copies the whole quantised group) would make every read carry
that room: q4res read 7.5 MB per 16 steps instead of 0.75 MB (bench/NOTES.md, commit 7709cec).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..gpu.backend import round_up
from .errors import KVError
from .layout import Layout
from .staging import ALSO_BYTES, Entry, Rows, Staging
from .store.scatter import Scatter

ROWS_ROLE, FLAGS_ROLE = "park_rows", "park_flags"  # step-parameter roles of the two scatters


class Handover:
    """`steps` slots of one decode step's staged words each; `park` fills the next one (recorded)."""

    def __init__(self, gpu: Any, layout: Layout, staging: Staging, scatter: Scatter, steps: int) -> None:
        group_words = layout.group_words
        # one position in every layer, plus (grouped) a whole group quantised by the step's row
        self.rows_max = layout.n_layers * (layout.stored_k_words + layout.stored_v_words + group_words)
        self.rows_max += layout.group * layout.n_layers * group_words
        self.flags_max = layout.n_layers * 2 * layout.n_kv
        self.rows_at = steps * self.flags_max  # first word of the rows: the flag slots come first
        if steps < 1 or ((self.rows_at + steps * self.rows_max) * 4 + ALSO_BYTES) > gpu.max_binding_bytes:
            raise KVError(f"a handover of {steps} decode steps ({(self.rows_max + self.flags_max) * 4} bytes each) "
                          f"does not fit one storage binding ({gpu.max_binding_bytes} bytes); use fewer steps per "
                          "readback")
        self.gpu, self.staging, self.scatter, self.steps = gpu, staging, scatter, steps
        self.buffer = gpu.buffer((self.rows_at + steps * self.rows_max) * 4 + ALSO_BYTES)
        self.rows_used = 0  # words of rows parked since the last readback
        # per parked step: its entries (words from 0) and where its rows start in the buffer
        self.parked: list[tuple[list[Entry], int]] = []

    def prepare(self) -> None:
        """Write the next park's destinations now, before its step is recorded (no write splits the pass)."""
        self.scatter.dst_words(self.rows_at + self.rows_used, 0, role=ROWS_ROLE)
        self.scatter.dst_words(len(self.parked) * self.flags_max, 0, role=FLAGS_ROLE)

    def park(self) -> None:
        """Record the copies of everything staged since the last park into the next slot; empty staging."""
        if len(self.parked) == self.steps:
            raise KVError(f"the handover holds {self.steps} steps: sync the host first")
        pending, words, flags = self.staging.take()
        if words > self.rows_max or flags > self.flags_max:
            raise KVError(f"a parked step staged {words} words and {flags} flags, above one slot's "
                          f"{self.rows_max} and {self.flags_max}: park after every one-position step")
        rows, flag_slot = self.rows_at + self.rows_used, len(self.parked) * self.flags_max
        self.scatter.record(self.staging.buffer, 0, words, 0, 0, self.buffer, rows, 0, role=ROWS_ROLE)
        self.scatter.record(self.staging.flags, 0, flags, 0, 0, self.buffer, flag_slot, 0, role=FLAGS_ROLE)
        self.parked.append((pending, rows))
        self.rows_used += words

    def readback(self, also: tuple[Any, int] | None) -> tuple[list[Rows], bytes]:
        """Every parked step's (entry, K rows, V rows), in booking order, and the `also` bytes: one read of
        the flag slots and the rows parked (not the room a step could have used)."""
        size, parked = self._take(also)
        return self._rows(parked, memoryview(self.gpu.read(self.buffer, size)), also)

    def start_readback(self, also: tuple[Any, int] | None) -> tuple[list[Entry], Callable[[], tuple[list[Rows], bytes]]]:
        """`readback` started now (`read_queued`, submitted with the work before it): the parked steps' entries,
        and a call that waits for their rows. The handover is empty at once: the next steps park into it while
        the read is on its way (the read's copy is ordered before their copies), and their submits are not held
        back by it (a `read_soon` map makes them wait for this block's GPU work: `bonsai.gpu.native_map`)."""
        size, parked = self._take(also)
        pending = self.gpu.read_queued(self.buffer, size)
        self.gpu.flush()
        return [e for entries, _ in parked for e in entries], lambda: self._rows(parked, memoryview(pending.result(bytes)),
                                                                                 also)

    def _take(self, also: tuple[Any, int] | None) -> tuple[int, list[tuple[list[Entry], int]]]:
        """Record the copy of `also` after the parked rows; (bytes to read, the parked steps); empty the handover."""
        tail = (self.rows_at + self.rows_used) * 4
        extra = round_up(also[1], 4) if also is not None else 0
        if also is not None:
            self.gpu.copy(also[0], 0, self.buffer, tail, extra)
        parked, self.parked, self.rows_used = self.parked, [], 0
        return tail + extra, parked

    def _rows(self, parked: list[tuple[list[Entry], int]], raw: memoryview,
              also: tuple[Any, int] | None) -> tuple[list[Rows], bytes]:
        out = []
        for j, (pending, rows) in enumerate(parked):
            flags = raw[j * self.flags_max * 4: (j + 1) * self.flags_max * 4].cast("I")
            out += self.staging.rows(pending, raw[rows * 4: (rows + self.rows_max) * 4], flags)
        tail = raw.nbytes - (round_up(also[1], 4) if also is not None else 0)
        return out, (bytes(raw[tail: tail + also[1]]) if also is not None else b"")
