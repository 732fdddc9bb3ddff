"""Measure what an adapter does not report: how many loop iterations one shader invocation may run."""

from __future__ import annotations

import struct
from typing import Any

TRIPS = 1 << 18  # far above any cap seen (lavapipe: 65535)


def loop_cap(gpu: Any) -> int | None:
    """The iterations a single loop completes before the driver ends it, or None when it is not capped.

    Mesa's llvmpipe (lavapipe) leaves every loop of an invocation once 65535 iterations have run in
    all of them together (`bonsai.kv.attention.driver.LOOP_BUDGET`), without an error; other drivers run the
    loop to the end.
    """
    kernel = gpu.kernel(__package__, "loop_cap.wgsl")
    params, out = gpu.upload(struct.pack("<4I", TRIPS, 1, 0, 0)), gpu.buffer(16)
    gpu.dispatch(kernel, [params, out], (1,))
    done = struct.unpack("<I", gpu.read(out, 4))[0]
    return None if done == TRIPS else done
