"""Model quality per KV mode: the default model on real text with K/V round-tripped through each mode.

The numpy reference forward (`bonsai.reference`) runs the text in chunks with its own KV cache; every
layer's new K/V are stored as the engine's cache stores them (`stored_kv.mode_transform`: the mode's
numpy codec, bit-identical to the store/group kernels) before attention, so errors compound through
the layers as in the runtime. Grouped-K modes
follow decode semantics exactly: a position sees the K of its own, unfinished group in f32 and every
full group quantised; the group is quantised when its last position is appended (so that position
already sees it quantised). Reported per mode, for positions up to each context length: perplexity,
mean KL(f32 || mode) of the next-token distributions, the argmax-change rate, and the bytes per
layer-position of the runtime's buffers for this model's shape.

Modes that keep V in the residual too (q4res) quantise a group's V rows at the same moment.

Text: `sample_text.TEXT` (Dickens, Darwin, Austen) followed by Python's own reference documentation
(`pydoc_data.topics`, shipped with CPython), so any install can re-run it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np

from ..kv.format.codec import GROUP, encode
from ..kv.format.modes import MODES, Mode
from ..reference.forward import log_probs
from .stored_kv import mode_transform


def quality_text() -> str:
    """The real English text the quality table is measured on."""
    import pydoc_data.topics as topics

    from .sample_text import TEXT

    return " ".join(TEXT.split()) + "\n\n" + "\n\n".join(topics.topics[k] for k in sorted(topics.topics))


def steps(n: int) -> list[tuple[int, int]]:
    """The forward calls over n positions: chunks of GROUP, each split before its last position, so a
    position sees its own group's K unquantised unless it ends the group (decode semantics)."""
    out = []
    for i in range(0, n, GROUP):
        end = min(i + GROUP, n)
        out += [(i, end - 1), (end - 1, end)] if end - i == GROUP else [(i, end)]
    return out


def mode_log_probs(model, ids: list[int], mode: Mode) -> Iterator[np.ndarray]:
    """Log-probabilities [n, vocab] (f64), chunk after chunk, with K/V stored as the engine's cache stores
    them in `mode` (`stored_kv.mode_transform`); the same chunks for every mode, covering `ids` in order."""
    cache = model.new_cache()
    transform = mode_transform(mode, cache)
    for start, end in steps(len(ids)):
        yield log_probs(model.forward(ids[start:end], cache=cache, kv_transform=transform))


def _compare(base: list[np.ndarray], chunks: Iterator[np.ndarray],
             target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per position: KL(base || mode), the mode's negative log-likelihood of target, argmax changed."""
    kl, nll, changed = [], [], []
    pos = 0
    for b, lp in zip(base, chunks, strict=True):
        b64 = b.astype(np.float64)
        n = len(lp)
        kl.append((np.exp(b64) * (b64 - lp)).sum(axis=-1))
        nll.append(-lp[np.arange(n), target[pos: pos + n]])
        changed.append(b.argmax(-1) != lp.argmax(-1))
        pos += n
    return np.concatenate(kl), np.concatenate(nll), np.concatenate(changed)


def bytes_per_position(mode: Mode, n_kv: int, head_dim: int) -> int:
    """Bytes per layer-position of the cache's slot rows (what `KVCache.bytes_per_position` measures)."""
    n = 2 * GROUP
    k = encode(np.zeros((n, n_kv, head_dim), np.float32), mode.k)
    v = encode(np.zeros((n, n_kv, head_dim), np.float32), mode.v)
    return (k.nbytes + v.nbytes) // n


def measure_quality(tokens: int = 512, lengths: list[int] | None = None, modes: list[str] | None = None,
                    progress: Callable[[str], None] | None = None) -> list[dict]:
    """Rows per mode and context length: bytes, bits/element, perplexity, mean KL, argmax changes."""
    from ..models import default_model_path
    from ..reference import ReferenceModel
    from ..tokenizer import Tokenizer

    model = ReferenceModel(default_model_path())
    cfg = model.config
    ids = Tokenizer.from_gguf(model.reader).encode(quality_text())[: tokens + 1]
    x, target = ids[:-1], np.array(ids[1:])
    lengths = sorted({min(n, len(x)) for n in (lengths or [len(x)])})
    t0 = time.perf_counter()
    base = [c.astype(np.float32) for c in mode_log_probs(model, x, MODES["f32"])]  # f32 keeps 4096 x vocab in RAM
    if progress:
        progress(f"f32: {time.perf_counter() - t0:.0f} s")
    rows = []
    nll0 = None
    for name in modes or list(MODES):
        mode = MODES[name]
        t0 = time.perf_counter()
        chunks = (b.astype(np.float64) for b in base) if name == "f32" else mode_log_probs(model, x, mode)
        kl, nll, changed = _compare(base, chunks, target)
        if nll0 is None:
            nll0 = _compare(base, iter(b.astype(np.float64) for b in base), target)[1]
        for n in lengths:
            rows.append({
                "mode": name, "context": n, "bytes_per_position": bytes_per_position(mode, cfg.n_kv_heads, cfg.head_dim),
                "bits_per_element": mode.bits_per_element(cfg.head_dim),
                "ppl": float(np.exp(nll[:n].mean())), "ppl_f32": float(np.exp(nll0[:n].mean())),
                "mean_kl": float(kl[:n].mean()), "mean_kl_last_half": float(kl[n // 2: n].mean()),
                "argmax_changed": float(changed[:n].mean()),
            })
        if progress:
            progress(f"{name}: {time.perf_counter() - t0:.0f} s")
    return rows


def quality_table(rows: list[dict]) -> str:
    lines = [f"{'mode':<7} {'context':>7} {'B/pos/layer':>11} {'bits/el':>7} {'ppl':>8} {'ppl f32':>8} "
             f"{'ppl +%':>7} {'mean KL':>9} {'KL 2nd half':>11} {'argmax chg':>10}"]
    for r in rows:
        lines.append(f"{r['mode']:<7} {r['context']:>7} {r['bytes_per_position']:>11} {r['bits_per_element']:>7.2f} "
                     f"{r['ppl']:>8.3f} {r['ppl_f32']:>8.3f} {100 * (r['ppl'] / r['ppl_f32'] - 1):>+7.2f} "
                     f"{r['mean_kl']:>9.4f} {r['mean_kl_last_half']:>11.4f} {r['argmax_changed']:>10.1%}")
    return "\n".join(lines)
