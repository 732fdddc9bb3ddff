"""The real-model part of `bonsai measure kv4`: SmolLM2's own K/V on real text, f32 vs 4-bit.

The numpy reference forward (`bonsai.reference`) runs the default model three times over the same
tokens: with f32 K/V, with every layer's K/V round-tripped through the 4-bit format (bit-identical
to the GPU store kernel), and with q4r (K rotated, quantised, rotated back: the same scores as
rotating Q). Errors compound through the layers, as they would in the runtime.
"""

from __future__ import annotations

import numpy as np

from ..kv.format.rotate import hadamard
from ..reference.forward import log_probs
from .measure import roundtrip


def _kv_transform(mode: str, worst: dict):
    def fn(layer: int, k: np.ndarray, v: np.ndarray):
        kq = roundtrip(k) if mode == "q4" else hadamard(roundtrip(hadamard(k)))
        vq = roundtrip(v)
        for kind, a, b in (("K", k, kq), ("V", v, vq)):
            rel = np.abs(b - a).max(axis=(0, 2)) / np.maximum(np.abs(a).max(axis=(0, 2)), 1e-30)
            h = int(np.argmax(rel))
            if rel[h] > worst.get(kind, (0.0, ""))[0]:
                worst[kind] = (float(rel[h]), f"layer {layer} kv-head {h}")
        return kq, vq

    return fn


def measure_model(tokens: int = 256) -> list[dict]:
    """Rows per mode and context bucket: mean/max KL(f32 || mode) and argmax-change rate."""
    from ..models import default_model_path
    from ..reference import ReferenceModel
    from ..tokenizer import Tokenizer
    from .sample_text import TEXT

    model = ReferenceModel(default_model_path())
    ids = Tokenizer.from_gguf(model.reader).encode(" ".join(TEXT.split()))[:tokens]
    base = log_probs(model.forward(ids))
    rows = []
    for mode in ("q4", "q4r"):
        worst: dict = {}
        lp = log_probs(model.forward(ids, kv_transform=_kv_transform(mode, worst)))
        kl = (np.exp(base) * (base - lp)).sum(axis=-1)
        changed = base.argmax(-1) != lp.argmax(-1)
        lo = 1
        while lo < len(ids):
            hi = min(2 * lo, len(ids))
            rows.append({
                "source": "SmolLM2-135M", "mode": mode, "positions": f"{lo}-{hi - 1}", "n": hi - lo,
                "mean_kl": float(kl[lo:hi].mean()), "max_kl": float(kl[lo:hi].max()),
                "argmax_changed": float(changed[lo:hi].mean()),
                "worst_k": f"{worst['K'][1]} (max rel err {worst['K'][0]:.3f})",
                "worst_v": f"{worst['V'][1]} (max rel err {worst['V'][0]:.3f})",
            })
            lo = hi
        rows.append({
            "source": "SmolLM2-135M", "mode": mode, "positions": f"1-{len(ids) - 1}", "n": len(ids) - 1,
            "mean_kl": float(kl[1:].mean()), "max_kl": float(kl[1:].max()),
            "argmax_changed": float(changed[1:].mean()),
            "worst_k": f"{worst['K'][1]} (max rel err {worst['K'][0]:.3f})",
            "worst_v": f"{worst['V'][1]} (max rel err {worst['V'][0]:.3f})",
        })
    return rows


def model_table(rows: list[dict]) -> str:
    lines = [f"{'model':<13} {'mode':<4} {'positions':>9} {'mean KL':>10} {'max KL':>10} {'argmax chg':>10}"]
    for r in rows:
        lines.append(f"{r['source']:<13} {r['mode']:<4} {r['positions']:>9} {r['mean_kl']:>10.2e} "
                     f"{r['max_kl']:>10.2e} {r['argmax_changed']:>10.1%}")
    for mode in ("q4", "q4r"):
        last = [r for r in rows if r["mode"] == mode]
        if last:
            lines.append(f"{mode}: worst K {last[-1]['worst_k']}; worst V {last[-1]['worst_v']}")
    return "\n".join(lines)
