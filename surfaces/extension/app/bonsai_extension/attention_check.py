"""The runtime's attention kernels on any GPU backend: windowed == whole cache, bit for bit, pure Python.

Drives `bonsai.kv`'s own `attention.wgsl` / `attention_serial.wgsl` (fold one window into the
online-softmax state; the GPU and the CPU-adapter variant) and
`finalize.wgsl` (acc / l, once) with parameter blocks packed by `struct`, because the browser has
no numpy and `bonsai.kv.attention` (the native driver) needs it. The invariant under test, from
attention.wgsl: positions are folded one at a time in increasing order and the state lives in an
f32 buffer between dispatches, so any split into windows performs the same f32 operations in the
same order as one whole-cache window; the outputs' raw bits must be equal.

Mutations (each must make the check fail): "drop_boundary" skips the first position of every
window after the first; "normalise_each_window" builds the kernel dividing acc by l at each window
boundary.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import struct
from array import array
from dataclasses import dataclass
from typing import Any

from bonsai.gpu import shaders

MUTATIONS = ("", "drop_boundary", "normalise_each_window")
# bonsai.kv.attention.VARIANTS: the wide kernel (one workgroup per token-head, for GPUs) and the
# serial one (one invocation per token-head, for CPU adapters); both must keep the invariant.
VARIANTS = {"wide": "attention.wgsl", "serial": "attention_serial.wgsl"}
_GROUP = 64  # @workgroup_size of attention_serial.wgsl and finalize.wgsl


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


def _windows(kv_len: int, size: int, mutate: str) -> list[tuple[int, int]]:
    ranges = [(s, min(s + size, kv_len)) for s in range(0, kv_len, size)]
    if mutate == "drop_boundary":
        ranges = [(s + (i > 0), e) for i, (s, e) in enumerate(ranges)]
    return ranges


def _fold_constants(filename: str, case: Case, mutate: str) -> dict[str, object]:
    """The fold kernel's template constants for `case`, as bonsai.kv.attention fills them.

    Two generations of the kernel's template are understood: per-format constants (K_BITS, K_BLOCK,
    K_WORDS, V_..., K_C4, GROUP: see bonsai.kv.formats) and the older ROW_WORDS + Q4. f32 rows are
    32-bit values, q4 rows 4-bit values with one f16 scale per row (block = the whole row).
    """
    common = {"HEAD_DIM": case.head_dim, "MUT_NORMALISE": mutate == "normalise_each_window",
              "MUT_GQA": False, "MUT_CAUSAL": False}
    wanted = set(re.findall(r"\{\{\s*([A-Z_][A-Z0-9_]*)\s*\}\}", shaders.load_source("bonsai.kv", filename)))
    if "ROW_WORDS" in wanted:
        return {**common, "ROW_WORDS": case.row_words, "Q4": case.mode != "f32"}
    bits = 32 if case.mode == "f32" else 4
    row: dict[str, object] = {"BITS": bits, "BLOCK": case.head_dim, "WORDS": case.row_words}
    if "K_ASYM" in wanted:  # symmetric rows here; asymmetric (min/max) formats are not exercised
        row["ASYM"] = False
    return {**common, "K_C4": False, "GROUP": 32, **{f"{kv}_{key}": value for kv in "KV" for key, value in row.items()}}


class _Driver:
    """Records fold + finalize for one case with the runtime's kernels (as bonsai.kv.attention does)."""

    def __init__(self, gpu: Any, case: Case, mutate: str, variant: str) -> None:
        self.gpu, self.case, self.mutate, self.variant = gpu, case, mutate, variant
        self.fold = gpu.kernel("bonsai.kv", VARIANTS[variant], **_fold_constants(VARIANTS[variant], case, mutate))
        self.finalize = gpu.kernel("bonsai.kv", "finalize.wgsl", HEAD_DIM=case.head_dim)
        scale = struct.unpack("<f", struct.pack("<f", 1.0 / math.sqrt(case.head_dim)))[0]
        pos_base = case.kv_len - case.n_q
        self.params = gpu.upload(struct.pack("<4If3I", pos_base, case.n_q, case.n_heads, case.n_kv, scale, 0, 0, 0))
        self._window_bufs: dict[tuple[int, int, int], Any] = {}

    def _window(self, start: int, end: int, first: bool) -> Any:
        key = (start, end, int(first))
        if key not in self._window_bufs:
            self._window_bufs[key] = self.gpu.upload(struct.pack("<8I", start, end, 0, 0, 0, int(first), 0, 0))
        return self._window_bufs[key]

    def record(self, q: Any, k: Any, v: Any, out: Any, windows: list[tuple[int, int]]) -> None:
        c = self.case
        n = c.n_q * c.n_heads
        if self.variant == "serial":
            fold_groups: tuple[int, ...] = (-(-n // _GROUP),)
        else:  # one workgroup per (token, head), folded to 2D past 65535
            fold_groups = (min(n, 65535), -(-n // 65535))
        wins = [self._window(s, e, i == 0) for i, (s, e) in enumerate(windows)]  # uploads before recording
        state = self.gpu.buffer(n * (c.head_dim + 2) * 4)
        for win in wins:
            self.gpu.dispatch(self.fold, [self.params, win, q, k, v, state], fold_groups)
        self.gpu.dispatch(self.finalize, [self.params, state, out], -(-n // _GROUP))


def run_case(gpu: Any, case: Case, window_sizes: list[int], seed: int, mutate: str = "",
             variant: str = "wide") -> dict:
    """Whole cache vs every window size (all recorded in one batch, read back once)."""
    rng = random.Random(f"{seed}/{case}")
    q = gpu.upload(array("f", (rng.gauss(0.0, 2.0) for _ in range(case.n_q * case.n_heads * case.head_dim))))
    k, v = gpu.upload(_rows(rng, case)), gpu.upload(_rows(rng, case))
    out_bytes = case.n_q * case.n_heads * case.head_dim * 4
    driver = _Driver(gpu, case, mutate, variant)
    sizes = [case.kv_len, *window_sizes]
    out = gpu.buffer(out_bytes * len(sizes))
    outs = [gpu.buffer(out_bytes) for _ in sizes]
    for size, dst in zip(sizes, outs, strict=True):
        driver.record(q, k, v, dst, _windows(case.kv_len, size, mutate))
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
        "kernels": [f"bonsai.kv/{name}" for name in (*VARIANTS.values(), "finalize.wgsl")],
        "mutate": mutate,
        "cases": cases,
    }
