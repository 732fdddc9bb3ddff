"""Long forced decoding in the page: the engine on BrowserGpu fed a given text's ids in the plan's steps,
each position scored in pure Python (no numpy here). The test that opens the page compares the
log-probs and argmax ids with the native runtime's on the same ids, schedule, KV mode and window.
"""

from __future__ import annotations

import time
from typing import Any

from .model_check import open_model


def run(gpu: Any, path: str, name: str, ids: list[int], kv: str = "f32", window: int = 2048) -> dict:
    """Forced decoding of `ids` from position 0: per scored position (1..n-1) the log-prob of the forced
    token and the argmax id of the logits before it, and the seconds the engine took."""
    from bonsai.config import ModelConfig
    from bonsai.diagnostics.forced_plan import schedule, score_row
    from bonsai.engine import Engine

    reader = open_model(path, name)
    engine = Engine(reader, ModelConfig.from_gguf(reader), gpu, kv=kv, window=window, progress=False,
                    max_positions=len(ids))
    steps = schedule(len(ids) - 1, engine.batch)  # the last token is only ever a target
    logprob: list[float] = []
    argmax: list[int] = []
    vocab = engine.cfg.vocab_size
    started = time.perf_counter()
    for start, end in steps:
        logits = engine.forward(list(ids[start:end])).cast("B").cast("f")  # flat: rows of vocab floats
        for i in range(end - start):
            lp, top = score_row(logits[i * vocab:(i + 1) * vocab], ids[start + i + 1])
            logprob.append(lp)
            argmax.append(top)
    return {"ok": True, "kv": kv, "window": window, "adapter": gpu.description, "tokens": len(ids),
            "steps": len(steps), "batch": engine.batch, "logprob": logprob, "argmax": argmax,
            "seconds": round(time.perf_counter() - started, 1)}
