"""The exactness matrix: windowed == whole-cache bit for bit, and an fp64 bound on accuracy.

Shared by the tests and `bonsai verify attention`. One case = one shape, mode and query block;
every window size of the case is recorded into one batch and read back once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..gpu.params import ParamCache
from ..kv.attention.driver import NO_MUTATIONS, Attention, Mutations, Window, split
from ..kv.format.codec import decode, encode
from ..kv.format.modes import MODES, get_mode
from ..kv.format.rotate import hadamard
from ..reference.attention import reference

GQA_SHAPES = ((4, 4), (8, 4), (9, 3), (16, 2))


def rel_tol(kv_len: int) -> float:
    """Allowed error against fp64 over the values the kernel reads (max |err| / max |ref|).

    The fold sums l and acc in f32 one position at a time, so rounding error grows with the number of
    positions, like sqrt(n) for random data: 1e-5 up to 64 positions, 1e-5 * sqrt(n / 64) beyond (at
    6,149 positions, 9.8e-5; the serial kernel measured 1.5-1.8e-5 there, the blocks one 2e-6).
    """
    return 1e-5 * max(1.0, math.sqrt(kv_len / 64))


@dataclass(frozen=True)
class Case:
    """One shape and query block: n_q tokens at pos_base = kv_len - n_q (decode when n_q == 1)."""

    n_heads: int
    n_kv: int
    head_dim: int
    mode: str
    kv_len: int
    n_q: int = 1

    @property
    def pos_base(self) -> int:
        return self.kv_len - self.n_q

    def __str__(self) -> str:
        kind = "decode" if self.n_q == 1 else f"prefill{self.n_q}"
        return f"{self.mode} heads {self.n_heads}/{self.n_kv} hd {self.head_dim} kv {self.kv_len} {kind}"


@dataclass
class CaseResult:
    """What one case showed: window sizes whose bits differ from whole-cache, and the fp64 error."""

    case: Case
    mismatched: list[int] = field(default_factory=list)
    rel_err: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatched and self.rel_err <= rel_tol(self.case.kv_len)

    def describe(self) -> str:
        bits = "bits equal" if not self.mismatched else f"bits differ at window sizes {self.mismatched[:8]}"
        return f"{self.case}: {bits}, fp64 rel err {self.rel_err:.2e}"


def case_data(case: Case, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian q [n_q, n_heads, hd], k, v [kv_len, n_kv, hd] (f32) with per-position scale spread."""
    rng = np.random.default_rng([seed, case.n_heads, case.n_kv, case.head_dim, case.kv_len, case.n_q])
    q = rng.standard_normal((case.n_q, case.n_heads, case.head_dim)).astype(np.float32) * 2
    k = rng.standard_normal((case.kv_len, case.n_kv, case.head_dim)).astype(np.float32)
    k *= rng.uniform(0.5, 3.0, (case.kv_len, 1, 1)).astype(np.float32)
    v = rng.standard_normal((case.kv_len, case.n_kv, case.head_dim)).astype(np.float32)
    return q, k, v


def full_groups(mode: str, kv_len: int) -> int:
    """Positions [0, this) hold quantised K; the rest is the f32 residual (grouped modes only)."""
    g = get_mode(mode).group
    return kv_len // g * g if g else kv_len


def stored(k: np.ndarray, v: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(K rows, V rows, residual) as the cache holds them after appending every position.

    Grouped modes: K of the full groups in c4/c4a, the newest partial group as f32 rows (the
    residual: K rows, then V rows in modes that keep V there too; their V rows are not in `V rows`).
    """
    m = get_mode(mode)
    kr = hadamard(k) if m.rotate_k else np.asarray(k, np.float32)
    q_end = full_groups(mode, len(k))
    v_end = q_end if m.v_residual else len(v)
    res = [kr[q_end:]] + ([v[q_end:]] if m.v_residual else [])
    return encode(kr[:q_end], m.kf), encode(v[:v_end], m.vf), encode(np.concatenate(res), "f32")


def windows_for(mode: str, kv_len: int, v_pos_words: int, size: int, k_buf: Any, v_buf: Any, res_buf: Any,
                mutations: Mutations = NO_MUTATIONS) -> list[Window]:
    """Windows of `size` positions over one whole-cache buffer; grouped modes cut them where the
    f32 residual starts (the residual's rows sit in their own buffer, row 0 = position q_end)."""
    q_end = full_groups(mode, kv_len)
    m = get_mode(mode)
    wins = []
    for s, e in split(kv_len, size, mutations):
        if s < q_end:
            wins.append(Window(k_buf, v_buf, s, min(e, q_end)))
        if e > q_end and m.v_residual:  # V rows follow the residual's K rows (f32, hd words each)
            n_res_words = (kv_len - q_end) * v_pos_words
            wins.append(Window(res_buf, res_buf, max(s, q_end), e, q_end, 0, n_res_words, True))
        elif e > q_end:
            wins.append(Window(res_buf, v_buf, max(s, q_end), e, q_end, 0, q_end * v_pos_words, True))
    return wins


@dataclass
class CaseBuffers:
    """A case's data (`case_data`) as the cache stores it (`stored`), on the host and uploaded."""

    case: Case
    q: np.ndarray
    ks: np.ndarray
    vs: np.ndarray
    res: np.ndarray
    q_buf: Any
    k_buf: Any
    v_buf: Any
    res_buf: Any

    def windows(self, size: int, mutations: Mutations = NO_MUTATIONS) -> list[Window]:
        """The cache cut into windows of `size` positions (`windows_for`)."""
        c = self.case
        v_pos_words = c.n_kv * (c.head_dim if get_mode(c.mode).v_residual else self.vs.shape[-1])
        return windows_for(c.mode, c.kv_len, v_pos_words, size, self.k_buf, self.v_buf, self.res_buf, mutations)


def upload_case(gpu: Any, case: Case, seed: int = 0) -> CaseBuffers:
    """The case's query and stored rows on the host and in GPU buffers (a 16-byte buffer for an empty part)."""
    q, k, v = case_data(case, seed)
    ks, vs, res = stored(k, v, case.mode)
    bufs = (gpu.upload(a) if a.size else gpu.buffer(16) for a in (q, ks, vs, res))
    return CaseBuffers(case, q, ks, vs, res, *bufs)


def run_case(gpu: Any, case: Case, window_sizes: list[int], mutations: Mutations = NO_MUTATIONS,
             params: ParamCache | None = None, seed: int = 0, variant: str = "auto") -> CaseResult:
    """Record the case once per window size (plus the whole cache), read back once, compare."""
    data = upload_case(gpu, case, seed)
    q, ks, vs, res, q_buf = data.q, data.ks, data.vs, data.res, data.q_buf
    att = Attention(gpu, case.n_heads, case.n_kv, case.head_dim, case.mode, mutations, params, variant)
    sizes = [case.kv_len] + [w for w in window_sizes if w != case.kv_len]
    out_bytes = q.nbytes
    outs = gpu.buffer(out_bytes * len(sizes))
    runs = []
    for w in sizes:
        windows = data.windows(w, mutations)
        att.plan(windows, case.pos_base, case.n_q)  # parameter buffers before recording
        runs.append((windows, gpu.buffer(att.state_bytes(case.n_q)), gpu.buffer(out_bytes)))
    for i, (windows, state, out) in enumerate(runs):
        att.record(q_buf, out, state, case.pos_base, case.n_q, windows)
        gpu.copy(out, 0, outs, i * out_bytes, out_bytes)
    got = np.frombuffer(gpu.read(outs), np.float32).reshape(len(sizes), *q.shape)
    whole = got[0].view(np.uint32)
    mismatched = [w for w, o in zip(sizes[1:], got[1:], strict=True) if not np.array_equal(o.view(np.uint32), whole)]
    m = get_mode(case.mode)
    qr = hadamard(q) if m.rotate_k else q
    res_rows = decode(res, "f32")
    n_res = case.kv_len - full_groups(case.mode, case.kv_len)
    k_seen = np.concatenate([decode(ks, m.kf).reshape(-1, case.n_kv, case.head_dim), res_rows[:n_res]])
    v_seen = decode(vs, m.vf).reshape(-1, case.n_kv, case.head_dim)
    if m.v_residual:
        v_seen = np.concatenate([v_seen, res_rows[n_res:]])
    ref = reference(qr, k_seen, v_seen, case.pos_base)
    rel = float(np.max(np.abs(got[0] - ref)) / np.max(np.abs(ref)))
    return CaseResult(case, mismatched, rel)


def matrix(kv_len: int, modes: tuple[str, ...] = tuple(MODES), head_dims: tuple[int, ...] = (64, 128),
           prefill: int = 16) -> list[Case]:
    """Every GQA shape x head_dim x mode, as decode at kv_len - 1 and as a causal prefill block."""
    return [Case(nh, nk, hd, mode, kv_len, n_q)
            for mode in modes for hd in head_dims for nh, nk in GQA_SHAPES for n_q in (1, prefill)]


def run_matrix(gpu: Any, cases: list[Case], window_sizes: list[int] | None = None,
               mutations: Mutations = NO_MUTATIONS, variant: str = "auto") -> list[CaseResult]:
    """Run every case (window sizes 1..kv_len unless given) on the `variant` kernel."""
    params = ParamCache(gpu, limit=1 << 16)
    return [run_case(gpu, c, window_sizes or list(range(1, c.kv_len + 1)), mutations, params, 0, variant)
            for c in cases]


# Long caches at the default model's shapes (SmolLM2-135M: 9 query heads over 3 KV heads, head_dim
# 64): three default-size (2,048-position) windows and a few positions of a fourth, so one fold runs
# far past lavapipe's loop budget unless the driver cuts it (attention.LOOP_BUDGET).
LONG_KV_LEN = 3 * 2048 + 5
LONG_WINDOWS = [2048, 700]
LONG_MODES = ("f32", "q4", "q4res")


def long_cases(modes: tuple[str, ...] = LONG_MODES, prefill: int = 16) -> list[Case]:
    """The model's shapes over LONG_KV_LEN positions: decode and a causal prefill block, per mode."""
    return [Case(9, 3, 64, mode, LONG_KV_LEN, n_q) for mode in modes for n_q in (1, prefill)]


def run_long(gpu: Any, cases: list[Case], variant: str = "auto") -> list[CaseResult]:
    """Each long case against the whole cache in one window, the default window and LONG_WINDOWS[1]."""
    params = ParamCache(gpu, limit=1 << 16)
    return [run_case(gpu, c, LONG_WINDOWS, NO_MUTATIONS, params, 0, variant) for c in cases]


def mutation_cases(kv_len: int = 64, prefill: int = 16) -> list[Case]:
    """The cut of the matrix the mutation checks run: GQA 8/4, f32, q4 and grouped kc4v4b (with
    kv_len - 7 positions, so that a quantised part and an f32 residual are both folded), decode and prefill."""
    cases = [Case(8, 4, 64, mode, kv_len, n_q) for mode in ("f32", "q4") for n_q in (1, prefill)]
    return cases + [Case(8, 4, 64, "kc4v4b", max(kv_len - 7, prefill + 1), n_q) for n_q in (1, prefill)]


def check_mutation(gpu: Any, mutations: Mutations, kv_len: int = 64, prefill: int = 16,
                   variant: str = "auto") -> list[CaseResult]:
    """Run the mutation cut with `mutations` injected (window sizes 1, 5 and whole)."""
    params = ParamCache(gpu, limit=1 << 16)
    return [run_case(gpu, c, [1, 5, c.kv_len], mutations, params, 0, variant) for c in mutation_cases(kv_len, prefill)]
