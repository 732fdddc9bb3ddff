"""Feed a prompt in the engine's own batches, reporting each and checking for stop between them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def feed_ahead(engine: Any, ids: list[int], on_batch: Callable[[int, int], None],
               check: Callable[[], None]) -> None:
    """Feed every batch of `ids` that `engine.prefill` would run before the batch holding the last token.

    The boundaries are the engine's own (after the prefix it keeps), so the KV cache is what one
    prefill of `ids` makes; the caller's generate then feeds the last batch. `check()` runs before
    each batch (it raises to stop), `on_batch(done, total)` once first and after each batch, with
    `done` counting the prompt tokens already in the cache.
    """
    todo = engine.continue_with(list(ids))
    start, batch = len(ids) - len(todo), engine.batch
    ahead = (len(todo) - 1) // batch * batch  # tokens in the batches before the last one
    on_batch(start, len(ids))
    for i in range(0, ahead, batch):
        check()
        engine.prefill_argmax(todo[i : i + batch])
        on_batch(start + i + batch, len(ids))
    check()
