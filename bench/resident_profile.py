"""Where the host time of the GPU-resident greedy loop goes: cProfile over the loop `decode_bench.py` times.

Prefills a context, then decodes in blocks of `--resident-steps` (as `Engine.generate` does greedily),
once unprofiled (tok/s, and each block's wall time: grouped modes quantise a group in some blocks) and once
under cProfile; prints the top entries by own time (or `--sort cumulative`) and writes JSON.

    python bench/resident_profile.py [--model PATH] [--kv q4res] [--context 1024] [--tokens 256] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time
from collections.abc import Callable
from pathlib import Path

from bonsai.engine.native import load_engine
from bonsai.engine.resident import ResidentBlocks

PROMPT = "The history of the printing press begins in the fifteenth century. "


def decode(engine, tok: int, tokens: int, resident: int, blocks: list | None = None,
           on_block: Callable[[list[int]], object] | None = None) -> int:
    """Decode `tokens` from `tok` as `Engine.generate` does (`ResidentBlocks`: the engine's blocks ahead);
    each block's (first position, wall seconds of its `take`) appended to `blocks`, its ids passed to
    `on_block`."""
    done = 0
    engine.resident_steps = resident
    run = ResidentBlocks(engine, tokens, lambda i: None)
    while done < tokens:
        t0, pos = time.perf_counter(), engine.pos - run.steps_in_flight
        ids = run.take(tok, done)
        if blocks is not None:
            blocks.append((pos, time.perf_counter() - t0))
        if on_block is not None:
            on_block(ids)
        tok = ids[-1]
        done += len(ids)
    run.close()
    return tok


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--kv", default="f32")
    p.add_argument("--context", type=int, default=1024)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--resident-steps", type=int, default=16)
    p.add_argument("--blocks-ahead", type=int, default=None, choices=(0, 1), help="default: the engine's")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "resident_profile.json"))
    a = p.parse_args()
    engine = load_engine(a.model, kv=a.kv, progress=False, warm_up=True, blocks_ahead=a.blocks_ahead,
                         max_positions=a.context + 2 * a.tokens + 64)
    ids = (engine.tokenizer.encode(PROMPT) * (a.context // 8 + 1))[: a.context]
    engine.prefill_argmax(ids)
    tok = decode(engine, engine.model.read_token(), 32, a.resident_steps)  # warm
    blocks: list[tuple[int, float]] = []
    t0 = time.perf_counter()
    tok = decode(engine, tok, a.tokens, a.resident_steps, blocks)
    plain = (time.perf_counter() - t0) / a.tokens
    prof = cProfile.Profile()
    prof.enable()
    decode(engine, tok, a.tokens, a.resident_steps)
    prof.disable()
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    stats.sort_stats(a.sort).print_stats(a.top)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    print(f"{engine.gpu.description}, kv {a.kv}, context {a.context}: {plain * 1e3:.3f} ms per token unprofiled "
          f"({1 / plain:.1f} tok/s); profiled: {total / a.tokens * 1e3:.3f} ms of Python per token")
    median = sorted(s for _, s in blocks)[len(blocks) // 2]
    print(f"blocks (first position: ms; * = over 1.2x the median {median * 1e3:.2f} ms): "
          + ", ".join(f"{p}: {s * 1e3:.2f}{'*' if s > 1.2 * median else ''}" for p, s in blocks))
    print(text.getvalue())
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"kv": a.kv, "context": a.context, "tokens": a.tokens, "ms_per_token": plain * 1e3,
                               "python_ms_per_token_profiled": total / a.tokens * 1e3,
                               "blocks": [{"pos": p, "ms": s * 1e3} for p, s in blocks]}, indent=2))


if __name__ == "__main__":
    main()
