"""Where a KV cache keeps what: words per row, window slots, and the bytes each position's rows take."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from .errors import KVError
from .format.modes import Mode
from .format.rows import GROUP

STREAM_WINDOW = 2048  # positions per window where windows stream (under a VRAM budget) and on CPU adapters
WINDOW_ALIGN = 64  # a default window is a multiple of this: every grouped mode's group divides it


def default_window(mode: Mode, n_kv: int, head_dim: int, max_positions: int, *, cpu: bool, budget: bool,
                   max_binding_bytes: int) -> int:
    """Positions per window when the caller gives none. On a GPU whose cache is wholly resident (no VRAM budget):
    one window for the whole context, halved while its slot would not fit one storage binding (each window costs a
    decode step its own fold dispatches in every layer: at 8K context four 2,048-position windows decoded at
    0.69-0.77x one window of 8,192 on the H100, bench/NOTES.md, commit 191e4e0). STREAM_WINDOW under a VRAM budget (the
    unit windows stream in) and on CPU adapters (the serial kernel reads slots through texture mirrors)."""
    if cpu or budget:
        return STREAM_WINDOW
    window = -(-max_positions // WINDOW_ALIGN) * WINDOW_ALIGN
    while (window > STREAM_WINDOW
           and Layout(mode, 1, n_kv, head_dim, max_positions, window).slot_bytes > max_binding_bytes):
        window = -(-window // 2 // WINDOW_ALIGN) * WINDOW_ALIGN
    return window


class Kind(Enum):
    """Which half of the cache: K rows or V rows."""

    K = "k"
    V = "v"


@dataclass(frozen=True)
class Layout:
    """One cache's shapes. A window slot (GPU buffer) and a window of the host master hold the same
    bytes: the window's K block [window, n_kv, k_row_words] u32, then its V block [window, n_kv, v_row_words]."""

    mode: Mode
    n_layers: int
    n_kv: int
    head_dim: int
    max_positions: int
    window: int

    def __post_init__(self) -> None:
        if min(self.n_layers, self.n_kv, self.head_dim, self.max_positions, self.window) < 1:
            raise KVError("KVCache sizes (layers, kv heads, head_dim, positions, window) must be >= 1")
        if self.mode.grouped and self.window % self.group:
            raise KVError(f"KV mode {self.mode.name} quantises K in groups of {self.group} positions: window must "
                          f"be a multiple of {self.group}, got {self.window}")
        try:
            self.mode.row_words(self.head_dim)
        except ValueError as exc:
            raise KVError(f"KV mode {self.mode.name}: {exc}") from None

    @cached_property
    def group(self) -> int:
        """Positions per K group (grouped modes; GROUP otherwise, unused)."""
        return self.mode.group or GROUP

    @cached_property
    def k_row_words(self) -> int:
        return self.mode.kf.row_words(self.head_dim)

    @cached_property
    def v_row_words(self) -> int:
        return self.mode.vf.row_words(self.head_dim)

    @cached_property
    def k_words(self) -> int:
        """u32 words of one position's K rows (all KV heads) in a slot."""
        return self.n_kv * self.k_row_words

    @cached_property
    def v_words(self) -> int:
        return self.n_kv * self.v_row_words

    @cached_property
    def stored_k_words(self) -> int:
        """Words of one position's K rows as the store kernel writes them (grouped K: f32)."""
        return self.n_kv * self.mode.k_store.row_words(self.head_dim)

    @cached_property
    def stored_v_words(self) -> int:
        return self.n_kv * self.mode.v_store.row_words(self.head_dim)

    @cached_property
    def group_v_words(self) -> int:
        """Words of one position's V rows in a quantised group copied out of its slot (modes with a V
        residual; 0 where V is stored as it arrives)."""
        return self.v_words if self.mode.v_residual else 0

    @cached_property
    def group_words(self) -> int:
        """Words of one position of a quantised group copied out of its slot (grouped modes; 0 otherwise)."""
        return self.k_words + self.group_v_words if self.mode.grouped else 0

    @cached_property
    def f32_row_bytes(self) -> int:
        """Bytes of one position's f32 rows (all KV heads): a residual row."""
        return self.n_kv * self.head_dim * 4

    @cached_property
    def n_windows(self) -> int:
        return -(-self.max_positions // self.window)

    @cached_property
    def slot_bytes(self) -> int:
        return self.window * (self.k_words + self.v_words) * 4

    @cached_property
    def v_block(self) -> int:
        """Byte offset of the V block in a window."""
        return self.window * self.k_words * 4

    def row_bytes(self, kind: Kind) -> int:
        return (self.k_words if kind is Kind.K else self.v_words) * 4

    def runs(self, kind: Kind, start: int, end: int) -> Iterator[tuple[int, int, int]]:
        """(byte offset in a layer's master, first position, end position) of each window's piece of [start, end)."""
        base = 0 if kind is Kind.K else self.v_block
        row = self.row_bytes(kind)
        p = start
        while p < end:
            win, r = divmod(p, self.window)
            stop = min(end, (win + 1) * self.window)
            yield win * self.slot_bytes + base + r * row, p, stop
            p = stop

    def slot_word(self, kind: Kind, pos: int) -> int:
        """The u32 word of position `pos`'s rows in its window's slot."""
        row = pos % self.window
        return row * self.k_words if kind is Kind.K else self.window * self.k_words + row * self.v_words
