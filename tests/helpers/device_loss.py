"""Runs of an engine whose device is destroyed mid-generation, beside an uninterrupted run."""

from __future__ import annotations

from typing import Any


def clean_and_lost(engine: Any, prompt: list[int], max_tokens: int, lose_at: int) -> tuple[Any, Any]:
    """(an uninterrupted greedy run, the same run with the device destroyed at step `lose_at`), no stop ids (random
    weights). The lost run must have recovered once, on a new device: asserted here."""
    clean = engine.generate(prompt, max_tokens=max_tokens, stop_ids=set())
    engine.reset()
    first_gpu = engine.gpu

    def lose_device(step: int) -> None:
        if step == lose_at:
            engine.gpu.device.destroy()

    lost = engine.generate(prompt, max_tokens=max_tokens, on_step=lose_device, stop_ids=set())
    assert engine.gpu is not first_gpu and len(lost.recoveries) == 1
    return clean, lost
