"""`bonsai measure kv4`: how far 4-bit (and rotated 4-bit) K/V move attention, by context length."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..kv.errors import KVError
from ..kv.format import codec
from ..kv.format.rotate import hadamard
from ..reference.attention import reference

LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


class TooCleanError(KVError):
    """A measurement table whose rows do not change with context length: the query is not where it claims."""


@dataclass(frozen=True)
class Row:
    """Attention-output error of one mode at one context length (query at pos_base)."""

    source: str
    mode: str
    length: int
    pos_base: int
    mean_abs: float
    max_abs: float
    worst: str  # where max_abs occurred


def roundtrip(x: np.ndarray) -> np.ndarray:
    """Rows through the 4-bit format and back (bit-identical to the GPU store kernel)."""
    return codec.roundtrip(x, "q4")


def cached_kv(mode: str, k: np.ndarray, v: np.ndarray,
              q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, k, v) as attention sees them in `mode`: q4r rotates K and Q before quantising K."""
    if mode == "f32":
        return q, k, v
    if mode == "q4":
        return q, roundtrip(k), roundtrip(v)
    return hadamard(q), roundtrip(hadamard(k)), roundtrip(v)


def synthetic(lengths=LENGTHS, modes=("q4", "q4r"), n_heads=9, n_kv=3, head_dim=64, seed=0,
              pos_base: Callable[[int], int] = lambda n: n - 1) -> list[Row]:
    """Gaussian K/V (one draw; each length uses its prefix) and a Gaussian query at pos_base(length)."""
    rng = np.random.default_rng(seed)
    top = max(lengths)
    k = rng.standard_normal((top, n_kv, head_dim)).astype(np.float32)
    v = rng.standard_normal((top, n_kv, head_dim)).astype(np.float32)
    q = (rng.standard_normal((1, n_heads, head_dim)) * 2).astype(np.float32)
    rows = []
    for n in lengths:
        pb = pos_base(n)
        ref = reference(q, k[:n], v[:n], pb)
        for mode in modes:
            qm, km, vm = cached_kv(mode, k[:n], v[:n], q)
            err = np.abs(reference(qm, km, vm, pb) - ref)
            head = int(np.argmax(err.max(axis=(0, 2))))
            rows.append(Row("synthetic", mode, n, pb, float(err.mean()), float(err.max()), f"head {head}"))
    return rows


def check_not_too_clean(rows: list[Row]) -> None:
    """Refuse tables whose error rows are identical across context lengths."""
    groups: dict[tuple[str, str], set[tuple[float, float]]] = {}
    counts: dict[tuple[str, str], int] = {}
    for r in rows:
        groups.setdefault((r.source, r.mode), set()).add((r.mean_abs, r.max_abs))
        counts[(r.source, r.mode)] = counts.get((r.source, r.mode), 0) + 1
    for key, values in groups.items():
        if counts[key] > 1 and len(values) == 1:
            raise TooCleanError(
                f"too clean: check pos_base ({key[0]} {key[1]}: every context length gives the same error, "
                "so the query cannot be attending to the whole context)"
            )


def table(rows: list[Row]) -> str:
    lines = [f"{'source':<10} {'mode':<4} {'length':>6} {'pos_base':>8} {'mean |err|':>11} {'max |err|':>10}  worst"]
    for r in rows:
        lines.append(f"{r.source:<10} {r.mode:<4} {r.length:>6} {r.pos_base:>8} {r.mean_abs:>11.3e} "
                     f"{r.max_abs:>10.3e}  {r.worst}")
    return "\n".join(lines)
