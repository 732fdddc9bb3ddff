"""Device loss on the browser's WebGPU: `device.lost` is seen, work fails with DeviceLostError, a new device recovers.

The same recovery the native engine does: open a new device, rebuild what lived on the old one
from host state, carry on with the same results. Here the "state" is the attention check's input,
and the recovered device must produce the same output bits as the lost one did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bonsai.errors import DeviceLostError

from .attention_check import CASES, run_case


def run(make_gpu: Callable[[], Any], *, seed: int = 0) -> dict:
    """Lose a device on purpose (destroy), check it is reported, recover on a fresh one, compare."""
    case = CASES[0]
    gpu = make_gpu()
    before = run_case(gpu, case, [7], seed)
    probe = gpu.buffer(16)
    gpu.destroy()
    error = None
    try:
        gpu.read(probe)
    except DeviceLostError as exc:
        error = f"{type(exc).__name__}: {exc}"
    fresh = make_gpu()
    after = run_case(fresh, case, [7], seed)
    return {
        "ok": error is not None and bool(gpu.lost) and after["whole_sha"] == before["whole_sha"]
        and not after["mismatched"],
        "lost": gpu.lost,
        "error": None if error else {"type": "AssertionError", "message": "reading from a destroyed device did not raise DeviceLostError"},
        "raised": error,
        "same_bits_after_recovery": after["whole_sha"] == before["whole_sha"],
    }
