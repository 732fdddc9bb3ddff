"""What the engine's cache stores per KV mode, on the reference side: the numpy reference's kv_transform.

Row modes quantise a row when it is stored; grouped modes (kc4*, q4res) keep the newest partial K group
(q4res: and its V) in f32 and quantise a group in the step that appends its last position, so every
query of that step sees it quantised. `bonsai.diagnostics.long_forced` (the engine against the
reference) and `bonsai.diagnostics.quality` (the quality table) both store K/V through `mode_transform`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kv.format.codec import roundtrip
from ..kv.format.modes import Mode
from ..kv.format.rotate import hadamard
from ..reference.forward import KVCache, KVTransform


def stored_k(mode: Mode, k: np.ndarray) -> np.ndarray:
    """K rows [n, n_kv, hd] as a row-format (not grouped) cache in `mode` stores and reads them back."""
    if mode.k == "f32":
        return k
    return hadamard(roundtrip(hadamard(k), mode.k)) if mode.rotate_k else roundtrip(k, mode.k)


def stored_v(mode: Mode, v: np.ndarray) -> np.ndarray:
    """V rows as a cache in `mode` stores and reads them back (grouped modes' V rows are row-format)."""
    return v if mode.v == "f32" else roundtrip(v, mode.v)


@dataclass
class Flips:
    """Stored elements whose 4-bit code differs from the reference's own rounding, and all compared."""

    differ: int = 0
    total: int = 0

    def count(self, stored: np.ndarray, own: np.ndarray, group: int) -> np.ndarray:
        """Counts elements apart by more than half a quantisation step (a different code; an f16 ulp of
        a scale moves every value of its group a little, not by a step). group: positions per
        per-channel group (0: per-row scales)."""
        if group:
            g = own.reshape(-1, group, *own.shape[1:])
            step = np.repeat(g.max(1) - g.min(1), group, axis=0) / 15
        else:
            step = (own.max(-1, keepdims=True) - own.min(-1, keepdims=True)) / 15
        self.differ += int(np.count_nonzero(np.abs(stored - own) > 0.5 * step))
        self.total += stored.size
        return stored


def mode_transform(mode: Mode, cache: KVCache, stored: list[tuple[np.ndarray, np.ndarray]] | None = None,
                   flips: Flips | None = None) -> KVTransform:
    """The reference's kv_transform that stores K/V in `cache` as the engine's cache does in `mode`.

    With `stored` (the engine's own stored rows, see `long_forced.stored_rows`), quantised rows are the
    engine's and each differing element is counted in `flips`: 4-bit rounding turns f32-level differences
    into whole quantisation steps at the rare values near a rounding boundary, and those compound through
    the layers; taking the engine's codes keeps the logits comparable while `flips` bounds how many differ.
    """
    flips = flips or Flips()

    def take(layer: int, kind: int, lo: int, own: np.ndarray) -> np.ndarray:
        if stored is None:
            return own
        return flips.count(stored[layer][kind][lo : lo + len(own)], own, mode.group if kind == 0 else 0)

    def rows(layer: int, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        old = cache.k[layer].shape[0] if len(cache.k) > layer else 0
        return take(layer, 0, old, stored_k(mode, k)), take(layer, 1, old, stored_v(mode, v))

    if not mode.grouped:
        return rows
    G = mode.group

    def grouped(layer: int, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        old = cache.k[layer].shape[0] if len(cache.k) > layer else 0
        done_before, done_after = old - old % G, (old + len(k)) // G * G  # full groups before / after the step
        if not mode.v_residual:
            v = take(layer, 1, old, stored_v(mode, v))
        if done_after == done_before:
            return k, v
        k_all = np.concatenate([cache.k[layer][done_before:], k]) if old else k.copy()
        v_all = np.concatenate([cache.v[layer][done_before:], v]) if old else v.copy()
        n = done_after - done_before
        own_k = np.concatenate([roundtrip(k_all[g : g + G], mode.k) for g in range(0, n, G)])
        k_all[:n] = take(layer, 0, done_before, own_k)
        if mode.v_residual:
            v_all[:n] = take(layer, 1, done_before, roundtrip(v_all[:n], mode.v))
        if old:
            cache.k[layer][done_before:] = k_all[: old - done_before]
            cache.v[layer][done_before:] = v_all[: old - done_before]
        return k_all[old - done_before :], v_all[old - done_before :]

    return grouped
