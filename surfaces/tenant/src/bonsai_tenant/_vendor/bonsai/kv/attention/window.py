"""A window of KV rows that attention folds: absolute positions, the buffers that hold them, the f32 residual."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NO_RESIDUAL = 0xFFFFFFFF  # Window.res_start of a window without f32 residual rows


@dataclass(frozen=True)
class Window:
    """Absolute positions [start, end) read from buffers k/v whose row 0 is position buf_base."""

    k: Any
    v: Any
    start: int
    end: int
    buf_base: int = 0
    k_off: int = 0  # words
    v_off: int = 0  # words
    residual: bool = False  # grouped-K modes: K rows are the f32 residual (newest partial group)
    # blocks variant, modes with a V residual (q4res): positions from res_start on are f32 rows of `res`
    # (row 0 = res_start; V rows from word res_v_off), folded in the same dispatch (`Attention.pieces`)
    res: Any = None
    res_start: int = NO_RESIDUAL
    res_v_off: int = 0
