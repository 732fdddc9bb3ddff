"""The runtime's windowed attention on any GPU backend: windowed == whole cache, bit for bit, no numpy.

Drives `bonsai.kv.attention.driver.Attention` itself (the same driver and `.wgsl` kernels the native cache
uses; it is pure Python) over random K/V rows uploaded with `array`/`struct`. The invariant under
test, from kv/attention/serial.wgsl: positions are folded one at a time in increasing order and the state
lives in an f32 buffer between dispatches, so any split into windows performs the same f32
operations in the same order as one whole-cache window; the outputs' raw bits must be equal.

Mutations (each must make the check fail): "drop_boundary" skips the first position of every
window after the first; "normalise_each_window" builds the kernel dividing acc by l at each window
boundary (the runtime's own `attention.Mutations`).
"""

from __future__ import annotations

import hashlib
import math
import random
import struct
from array import array
from dataclasses import dataclass
from typing import Any

from bonsai.kv.attention.driver import Attention, Mutations, Window, split

MUTATIONS = ("", "drop_boundary", "normalise_each_window")
VARIANTS = ("serial", "blocks")  # every kernel the runtime may pick; each must keep the invariant


@dataclass(frozen=True)
class Case:
    """One shape: n_q query tokens at positions kv_len - n_q .. kv_len - 1, rows in `mode`."""

    n_heads: int
    n_kv: int
    head_dim: int
    mode: str  # "f32" or "q4" (the kernel's two row formats)
    kv_len: int
    n_q: int

    @property
    def row_words(self) -> int:
        return self.head_dim if self.mode == "f32" else self.head_dim // 8 + 1

    def __str__(self) -> str:
        return f"{self.mode} heads {self.n_heads}/{self.n_kv} hd {self.head_dim} kv {self.kv_len} n_q {self.n_q}"


# head_dim >= 32: bonsai.kv's kernels divide by HEAD_DIM / 32 in constant expressions, which the
# browser's WGSL compiler (Tint) rejects as a division by zero when HEAD_DIM < 32.
CASES = (
    Case(4, 2, 32, "f32", 37, 1),
    Case(4, 2, 32, "f32", 37, 3),
    Case(6, 3, 64, "q4", 29, 2),
    Case(4, 2, 32, "q4", 150, 1),  # past two 64-position blocks: the blocks kernel merges and carries
)


def _rows(rng: random.Random, case: Case) -> array:
    """Random K or V rows in the cache format: f32 bits, or q4 nibble words + an f16 scale slot."""
    out = array("I")
    for _ in range(case.kv_len * case.n_kv):
        if case.mode == "f32":
            out.frombytes(array("f", (rng.gauss(0.0, 1.5) for _ in range(case.head_dim))).tobytes())
        else:
            out.extend(rng.getrandbits(32) for _ in range(case.head_dim // 8))
            out.append(struct.unpack("<H", struct.pack("<e", rng.uniform(0.05, 0.6)))[0])
    return out


def run_case(gpu: Any, case: Case, window_sizes: list[int], seed: int, mutate: str = "",
             variant: str = "serial") -> dict:
    """Whole cache vs every window size (all recorded in one batch, read back once)."""
    rng = random.Random(f"{seed}/{case}")
    q = gpu.upload(array("f", (rng.gauss(0.0, 2.0) for _ in range(case.n_q * case.n_heads * case.head_dim))))
    k, v = gpu.upload(_rows(rng, case)), gpu.upload(_rows(rng, case))
    out_bytes = case.n_q * case.n_heads * case.head_dim * 4
    mutations = Mutations(drop_boundary=mutate == "drop_boundary",
                          normalise_each_window=mutate == "normalise_each_window")
    att = Attention(gpu, case.n_heads, case.n_kv, case.head_dim, case.mode, mutations, variant=variant)
    sizes = [case.kv_len, *window_sizes]
    out = gpu.buffer(out_bytes * len(sizes))
    outs = [gpu.buffer(out_bytes) for _ in sizes]
    for size, dst in zip(sizes, outs, strict=True):
        windows = [Window(k, v, s, e) for s, e in split(case.kv_len, size, mutations)]
        att.record(q, dst, gpu.buffer(att.state_bytes(case.n_q)), case.kv_len - case.n_q, case.n_q, windows)
    for i, dst in enumerate(outs):
        gpu.copy(dst, 0, out, i * out_bytes, out_bytes)
    data = gpu.read(out)
    whole = data[:out_bytes]
    values = struct.unpack(f"<{len(whole) // 4}f", whole)
    if not all(math.isfinite(x) for x in values) or not any(values):
        # equal garbage is not exactness: every (token, head) must have been computed
        raise AssertionError(f"{case}: whole-cache attention gave zeros or NaN/inf; the kernels did not run as driven")
    mismatched = [size for i, size in enumerate(window_sizes, 1) if data[i * out_bytes:(i + 1) * out_bytes] != whole]
    return {"case": f"{variant} {case}", "window_sizes": window_sizes, "mismatched": mismatched,
            "whole_sha": hashlib.sha256(whole).hexdigest()[:16]}


def run(gpu: Any, *, seed: int = 0, mutate: str = "") -> dict:
    """Every case in CASES; ok when every window size gives the whole cache's bits exactly."""
    if mutate not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutate!r}; known: {', '.join(m for m in MUTATIONS if m)}")
    cases = []
    for variant in VARIANTS:
        for case in CASES:
            sizes = sorted({1, 2, 7, 16, case.kv_len - 1} - {case.kv_len})
            cases.append(run_case(gpu, case, sizes, seed, mutate, variant))
    return {
        "ok": not any(c["mismatched"] for c in cases),
        "kernels": ["bonsai.kv.attention/serial.wgsl", "bonsai.kv.attention/blocks.wgsl",
                    "bonsai.kv.attention/merge_blocks.wgsl", "bonsai.kv.attention/finalize.wgsl"],
        "mutate": mutate,
        "cases": cases,
    }
