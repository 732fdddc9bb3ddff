"""Deliberate attention bugs, for the tests and `bonsai verify attention` only (all off in the runtime),
and `split`, the windows those checks cut a cache into."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutations:
    """Which deliberate bugs are on (each a flag; see the numbered comments)."""

    drop_boundary: bool = False  # (1) skip the first position of every window after the first
    overlap: bool = False  # (2) start every later window one position early (counted twice)
    normalise_each_window: bool = False  # (3) acc /= l, l = 1 at each window boundary
    pos_base_zero: bool = False  # (4) run the query at pos_base = 0
    gqa_modulo: bool = False  # (5) KV head h % n_kv instead of h // (n_heads / n_kv)
    causal_plus_one: bool = False  # (6) let token i see position pos_base + i + 1


NO_MUTATIONS = Mutations()


def split(kv_len: int, size: int, mutations: Mutations = NO_MUTATIONS) -> list[tuple[int, int]]:
    """Consecutive [start, end) ranges of `size` positions covering [0, kv_len)."""
    ranges = [(s, min(s + size, kv_len)) for s in range(0, kv_len, size)]
    if mutations.drop_boundary:
        ranges = [(s + (i > 0), e) for i, (s, e) in enumerate(ranges)]
    if mutations.overlap:
        ranges = [(s - (i > 0), e) for i, (s, e) in enumerate(ranges)]
    return ranges
