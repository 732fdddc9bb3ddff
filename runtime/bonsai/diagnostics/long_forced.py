"""Long forced decoding: the engine against the numpy reference over >1,000 tokens of real text, per KV mode.

Both sides feed the same token schedule (batched chunks of the engine's batch size, then a tail of
one-token decode steps) so the prefill and the decode paths are both checked past several windows.
The reference (`bonsai.reference.ReferenceModel`) quantises K/V exactly when the engine's cache does:
row modes when a row is stored; grouped modes (q4res, kc4...) when a group's last position has been
appended by a step, so every query of that step sees the full group quantised and later positions
in f32 (the engine's residual). Reported per run: argmax agreement and the largest |Δ log-prob| of
the forced next token, and the first position where it exceeds 0.01.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..kv.format.modes import get_mode
from ..kv.format.rotate import hadamard
from ..reference.forward import ReferenceModel, log_probs
from .forced_plan import (  # noqa: F401 - the plan's names are read through this module (cli/verify, tests)
    DECODE_TAIL,
    MAX_LOGPROB_ERROR,
    MIN_AGREEMENT,
    TOKENS,
    schedule,
    split_window,
)
from .stored_kv import Flips, mode_transform

MAX_FLIPS = 1e-3  # of the stored 4-bit elements may differ from the reference's own rounding (see stored_kv.mode_transform)


@dataclass(frozen=True)
class Forced:
    """Per scored position (1..n-1): the forced token's log-prob and the argmax id of the logits before it."""

    logprob: np.ndarray  # float64 [n-1]
    argmax: np.ndarray  # int64 [n-1]


@dataclass(frozen=True)
class Comparison:
    """One engine run against the reference."""

    kv: str
    window: int
    tokens: int
    agreement: float
    max_error: float
    first_bad: int | None  # first position whose |Δ log-prob| > 0.01 (None: none)
    flips: float = 0.0  # fraction of stored quantised elements unlike the reference's own rounding
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.agreement >= MIN_AGREEMENT and self.max_error <= MAX_LOGPROB_ERROR and self.flips <= MAX_FLIPS

    def describe(self) -> str:
        bad = "none" if self.first_bad is None else str(self.first_bad)
        return (f"kv {self.kv:<6} window {self.window:>5}: {self.tokens} tokens, argmax agreement "
                f"{self.agreement:.4f}, max |Δ log-prob| {self.max_error:.2e}, first |Δ| > 0.01 at {bad}, "
                f"stored codes unlike the reference's {self.flips:.1e} ({self.seconds:.0f} s)")


def _scored(logits: np.ndarray, ids: Sequence[int], start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-probs of the forced next tokens and argmax ids for the rows of positions [start, end)."""
    rows = min(end, len(ids) - 1) - start
    lp = log_probs(logits[:rows])
    return lp[np.arange(rows), np.asarray(ids[start + 1 : start + 1 + rows], np.int64)], np.argmax(logits[:rows], -1)


def _collect(steps: list[tuple[int, int]], ids: Sequence[int],
             logits_of: Callable[[int, int], np.ndarray]) -> Forced:
    lps, amx = [], []
    for start, end in steps:
        lp, am = _scored(np.asarray(logits_of(start, end)), ids, start, end)
        lps.append(lp)
        amx.append(am)
    return Forced(np.concatenate(lps), np.concatenate(amx).astype(np.int64))


def engine_forced(engine, ids: Sequence[int], steps: list[tuple[int, int]]) -> Forced:
    """Forced decoding on the engine, one `Engine.forward` per step of `steps`, from position 0."""
    engine.reset()
    return _collect(steps, ids, lambda s, e: engine.forward(list(ids[s:e])))


def stored_rows(engine) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Per layer, the K and V the engine's cache stored, decoded to f32 (K unrotated); None for f32 KV."""
    cache = engine.cache
    if cache.layout.mode.name == "f32":
        return None
    mode = cache.layout.mode
    out = []
    for layer in range(engine.cfg.n_layers):
        k = cache.dequantised(layer, "k")
        out.append((hadamard(k) if mode.rotate_k else k, cache.dequantised(layer, "v")))
    return out


def reference_forced(model: ReferenceModel, ids: Sequence[int], steps: list[tuple[int, int]], kv: str,
                     stored: list[tuple[np.ndarray, np.ndarray]] | None = None) -> tuple[Forced, float]:
    """Forced decoding on the numpy reference with K/V stored as the engine stores them in mode `kv`
    (the engine's own quantised rows where `stored` is given); and the fraction of stored elements
    that differ from the reference's own rounding (0.0 without `stored`)."""
    cache = model.new_cache()
    flips = Flips()
    transform = mode_transform(get_mode(kv), cache, stored, flips)
    forced = _collect(steps, ids, lambda s, e: model.forward(ids[s:e], cache=cache, kv_transform=transform))
    return forced, flips.differ / max(1, flips.total)


def compare(got: Forced, want: Forced, *, kv: str, window: int, flips: float = 0.0,
            seconds: float = 0.0) -> Comparison:
    """Argmax agreement and log-prob error of `got` (engine) against `want` (reference)."""
    err = np.abs(got.logprob - want.logprob)
    bad = np.flatnonzero(err > 0.01)
    return Comparison(kv, window, len(err) + 1, float(np.mean(got.argmax == want.argmax)), float(err.max()),
                      int(bad[0]) + 1 if len(bad) else None, flips, seconds)


def long_text_ids(tokenizer, n: int = TOKENS) -> list[int]:
    """The first n tokens of the quality text (Dickens, Darwin, Austen, then CPython's own docs)."""
    from .quality import quality_text

    ids = tokenizer.encode(quality_text())
    if len(ids) < n:
        raise ValueError(f"the sample text has {len(ids)} tokens, fewer than {n}")
    return ids[:n]


class LongForced:
    """Forced decoding of `ids` on `engine` (one weight upload; a fresh cache per check) against `model`.

    The engine's cache must be a `NumpyKVCache` (`load_engine(..., cache_factory=NumpyKVCache)`) for
    quantised modes, whose stored rows the reference takes (see `mode_transform`).
    """

    def __init__(self, engine, model: ReferenceModel, ids: Sequence[int],
                 progress: Callable[[str], None] | None = None) -> None:
        self.engine, self.model, self.ids, self.progress = engine, model, list(ids), progress
        self.steps = schedule(len(ids) - 1, engine.batch)  # the last token is only ever a target
        self._f32_ref: Forced | None = None
        # references taken from stored rows, by the rows' digest: windowed runs store the same bits as
        # whole-cache ones (the attention invariant), so each mode's second window reuses the first's
        self._stored_refs: dict[tuple[str, str], tuple[Forced, float]] = {}

    def f32_reference(self) -> Forced:
        """The reference with f32 K/V (computed once)."""
        if self._f32_ref is None:
            self._f32_ref = self._reference("f32", None)[0]
        return self._f32_ref

    def prefix(self, n: int) -> LongForced:
        """The same check on the first n tokens, reusing this one's f32 reference (the positions before
        the last DECODE_TAIL ran as batched steps there: f32 rounding apart, far inside the bound)."""
        out = LongForced(self.engine, self.model, self.ids[:n], self.progress)
        ref = self.f32_reference()
        out._f32_ref = Forced(ref.logprob[: n - 1], ref.argmax[: n - 1])
        return out

    def _reference(self, kv: str, stored) -> tuple[Forced, float]:
        t0 = time.perf_counter()
        out = reference_forced(self.model, self.ids, self.steps, kv, stored)
        if self.progress:
            self.progress(f"reference, kv {kv}: {time.perf_counter() - t0:.0f} s")
        return out

    def _stored_reference(self, kv: str, stored: list[tuple[np.ndarray, np.ndarray]]) -> tuple[Forced, float]:
        digest = hashlib.sha256()
        for k, v in stored:
            digest.update(np.ascontiguousarray(k).tobytes())
            digest.update(np.ascontiguousarray(v).tobytes())
        key = (kv, digest.hexdigest())
        if key not in self._stored_refs:
            self._stored_refs[key] = self._reference(kv, stored)
        return self._stored_refs[key]

    def check(self, kv: str, window: int) -> Comparison:
        """One engine run in mode `kv` with `window`-position windows, against the reference."""
        self.engine.use_cache(kv=kv, window=window)
        t0 = time.perf_counter()
        got = engine_forced(self.engine, self.ids, self.steps)
        seconds = time.perf_counter() - t0
        stored = stored_rows(self.engine)
        want, flips = (self.f32_reference(), 0.0) if stored is None else self._stored_reference(kv, stored)
        out = compare(got, want, kv=kv, window=window, flips=flips, seconds=seconds)
        if self.progress:
            self.progress(out.describe())
        return out
