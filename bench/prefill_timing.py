"""Prefill timing for decode_bench.py: each prefill kernel (tiled shapes, the old matvec) in one process.

Every choice is warmed once (its kernels and parameter buffers), then the choices are timed in turn,
`repeats` rounds interleaved, so their ratios come from one run on one warm device.
"""

from __future__ import annotations

import statistics
import time

from bonsai.ops import tiled

MATVEC = "matvec"


PER_MATRIX = "per matrix"  # plain 'tiled': the runtime's choice of tile for each matrix (`tiled.tile_for`)


DEFAULT_PAIR = (tiled.WIDE, tiled.NARROW)  # the runtime's tiles, restored after each choice
Choice = tiled.Tile | tuple[tiled.Tile, tiled.Tile] | str | None


def parse_kernels(text: str) -> list[tuple[str, Choice]]:
    """'tiled,matvec,tiled:64x64x8,tiled:64x64x8x8/64x64x4' -> [(label, choice)]: None is the matvec (the old
    path); plain 'tiled' is the runtime's default (PER_MATRIX, or the tile `tiled.TILE` sets); 'tiled:A/B' runs
    the matrices with more rows than columns on tile A, the rest on B (the runtime's WIDE and NARROW)."""
    out: list[tuple[str, Choice]] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part == MATVEC:
            out.append((MATVEC, None))
        elif part == "tiled" and tiled.TILE is None:
            out.append((f"tiled {PER_MATRIX}", PER_MATRIX))
        elif part.startswith("tiled:") and "/" in part:
            wide, narrow = (tiled.Tile.parse(t) for t in part.split(":", 1)[1].split("/"))
            out.append((f"tiled {wide}/{narrow}", (wide, narrow)))
        elif part == "tiled" or part.startswith("tiled:"):
            tile = tiled.Tile.parse(part.split(":", 1)[1]) if ":" in part else tiled.TILE
            assert tile is not None
            out.append((f"tiled {tile}", tile))
        else:
            raise SystemExit(f"--prefill-kernels: unknown kernel {part!r} (tiled, tiled:BMxBNxTM[xTN[xBK]], "
                             "tiled:WIDE/NARROW, matvec)")
    return out


def use(choice: Choice, min_tokens: int | None) -> None:
    """Make batches take `choice` (None: the matvec for every batch; PER_MATRIX: the runtime's choice; a pair:
    the runtime's choice between these two tiles)."""
    tiled.WIDE, tiled.NARROW = DEFAULT_PAIR
    if choice is None:
        tiled.MIN_TOKENS = None
    elif isinstance(choice, tuple):
        tiled.TILE, tiled.MIN_TOKENS = None, min_tokens
        tiled.WIDE, tiled.NARROW = choice
    else:
        tiled.TILE, tiled.MIN_TOKENS = (None if choice == PER_MATRIX else choice), min_tokens


def time_one(engine, ids: list[int]) -> tuple[float, int, int]:
    """(seconds, dispatches, argmax id) of one prefill of `ids` from position 0."""
    engine.reset()
    d0 = engine.gpu.dispatch_count
    t0 = time.perf_counter()
    tok = engine.prefill_argmax(ids)
    dt = time.perf_counter() - t0
    engine.reset()
    return dt, engine.gpu.dispatch_count - d0, tok


def compare(engine, ids: list[int], kernels: list[tuple[str, Choice]], repeats: int) -> list[dict]:
    """One row per kernel: best and median tok/s over `repeats` interleaved rounds, dispatches per
    prefill token, the argmax id it prefilled to."""
    default = (tiled.TILE, tiled.MIN_TOKENS)
    min_tokens = tiled.MIN_TOKENS or tiled.ON_THRESHOLD
    runs: dict[str, list[float]] = {label: [] for label, _ in kernels}
    facts: dict[str, tuple[int, int]] = {}
    try:
        for label, tile in kernels:  # warm: compile, parameter buffers, bind groups
            use(tile, min_tokens)
            _, disp, tok = time_one(engine, ids)
            facts[label] = (disp, tok)
        for _ in range(repeats):
            for label, tile in kernels:
                use(tile, min_tokens)
                runs[label].append(time_one(engine, ids)[0])
    finally:
        tiled.TILE, tiled.MIN_TOKENS = default
        tiled.WIDE, tiled.NARROW = DEFAULT_PAIR
    return [{"kernel": label, "prefill_tok_s": len(ids) / min(runs[label]),
             "prefill_tok_s_median": len(ids) / statistics.median(runs[label]), "runs_s": runs[label],
             "dispatches_per_prefill_token": facts[label][0] / len(ids), "argmax": facts[label][1]}
            for label, _ in kernels]


def print_table(g: dict, repeats: int) -> None:
    """The prefill kernels' table (one process, interleaved rounds) and the first request's rate."""
    ks = g["prefill_kernels"]
    last = ks[-1]
    print(f"prefill of {g['prefill_tokens']} tokens by kernel ({repeats} interleaved rounds; "
          f"ratio to {last['kernel']}):")
    print(f"{'kernel':24} {'best tok/s':>11} {'median tok/s':>12} {'ratio':>6} {'disp/prefill tok':>16} {'argmax':>7}")
    for r in ks:
        print(f"{r['kernel']:24} {r['prefill_tok_s']:11.1f} {r['prefill_tok_s_median']:12.1f} "
              f"{r['prefill_tok_s'] / last['prefill_tok_s']:6.2f} {r['dispatches_per_prefill_token']:16.3f} "
              f"{r['argmax']:7d}")
    print(f"first request after loading ({g['load_s']:.1f} s, {g['warmed_kernels']} kernels compiled at load): "
          f"{g['first_prefill_tok_s']:.1f} tok/s, {g['first_prefill_compiled']} kernels compiled in it; "
          f"steady / first = {g['prefill_tok_s'] / g['first_prefill_tok_s']:.2f}x")
