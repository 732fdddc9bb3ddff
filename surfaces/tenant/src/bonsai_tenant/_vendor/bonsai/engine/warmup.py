"""Compile every pipeline a request needs at load, so the first request does not pay for it.

Kernels are compiled on first use (`Recorder.kernel`), and which ones a step uses depends on its
shape: a batch of at least `tiled.MIN_TOKENS` tokens takes the tiled matmul, a shorter batch the
matvec for token groups, one token the matvec with the norm fused, the GPU-resident loop its parking
kernels. Rather than list kernels here (and miss the next one someone adds), the warm-up runs one
step of each shape on dummy tokens at the first positions of the empty cache, then forgets them: the
kernels a request would compile are then in the device's cache (on a GPU, with a whole first batch,
the parameter blocks and bind groups of a first prompt's steps too).
"""

from __future__ import annotations

from typing import Any

from ..gpu.params import SETS
from ..ops import tiled
from .progress import Progress


def step_lengths(batch: int, room: int, tiles: bool, full: bool = False, fill_group: int = 0,
                 resident: bool = False) -> list[int]:
    """Token counts of the warm-up's steps within `room` positions: a batch that takes the tiled matmul
    (where the matrices can: `tiles`), a short batch, one token. full: the first step is a whole batch
    (as much of one as leaves room for the other two). fill_group (with full): a grouped KV mode's group;
    another batch before the one-token step makes that step fill a group, or (resident: a block of
    GPU-resident steps follows) the block's first step."""
    big = max(2, min(batch, tiled.MIN_TOKENS or 2)) if tiles else 2
    if full:
        big = max(big, min(batch, room - 3))
    out: list[int] = []
    for n in dict.fromkeys((big, 2, 1)):
        if n <= batch and sum(out) + n <= room:
            out.append(n)
    filler = sum(out[:-1]) + resident  # the position of the step that is to fill a group
    pad = (fill_group - 1 - filler) % fill_group if full and fill_group and out[-1:] == [1] else 0
    if 0 < pad <= batch and sum(out) + pad <= room:
        out.insert(len(out) - 1, pad)
    return out


def warm_up(engine: Any) -> int:
    """Run the warm-up steps on `engine` (its cache must hold nothing yet) and rewind to position 0; the
    number of pipelines compiled."""
    gpu = engine.gpu
    before = gpu.compiled
    # the resident block: its first step (a grouped mode's fill) and one step after it in each set of step
    # parameters (`StepParams`: their fold dispatches bind the windows after the fill, with each set's slots)
    block = 1 + SETS
    room = engine.max_positions - block
    layer = engine.weights.layers[0]  # a batch of MIN_TOKENS only where a matrix would take the tiled kernel
    tiles = tiled.MIN_TOKENS is not None and tiled.applies(layer.wo, tiled.MIN_TOKENS)
    # on a GPU the first step is a whole batch: a first prompt of up to that many tokens then also finds
    # its steps' parameter blocks and bind groups made (q4res makes several per 64-position group: on the
    # H200 its first request ran 2.2-2.6x slower than the next ones, bench/NOTES.md, commit a5062ac); on a
    # CPU adapter a whole batch would add seconds to every load
    # and where the cache quantises K in groups, a one-token step fills one: the group kernels' bind groups
    # (several per layer) are made then, not in a request's first decode step to fill a group
    resident = engine.resident_steps > 1 and bool(getattr(engine.cache, "can_park", False))
    layout = getattr(engine.cache, "layout", None)
    group = layout.mode.group if layout is not None else 0
    lengths = step_lengths(engine.batch, room, tiles, full=not gpu.is_cpu, fill_group=group, resident=resident)
    with Progress("compiling kernels", len(lengths) + resident, enabled=engine.progress) as bar:
        for n in lengths:  # all rows' logits: the output matrix takes the batch's kernel too (`forward`)
            engine._step([0] * n, all_logits=True)
            bar.advance(1)
        if resident and engine.pos + block <= engine.max_positions:
            engine._steps_on_gpu(0, block, lambda j: None)
            bar.advance(1)
    engine.reset()
    return int(gpu.compiled - before)
