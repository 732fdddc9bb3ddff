"""Parameter buffers that keep their identity across steps: rewritten in place when their words change.

`ParamCache` gives every distinct content its own buffer, so a value that changes every decode step
(the query position, the newest window's end, the row a new K/V lands in) makes a new buffer and a
new bind group per layer per step. `StepParams` keeps one buffer per *role* instead and rewrites it
only when its words differ from the last write, so bind groups stay cached and a step that was
prepared before recording (`KVCache.prepare`) records without any write splitting its pass.
A rewrite is `Gpu.write`, which is ordered after every dispatch recorded so far: correct at any time.
"""

from __future__ import annotations

from typing import Any

from .words import pack_u32, param_key


class StepParams:
    """One small buffer per role; `get(role, *words)` returns it holding exactly `words`."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._bufs: dict[tuple, tuple[Any, tuple[int, ...]]] = {}
        self.rewrites = 0  # writes since creation (a decode step should cost a few, not one per layer)

    def get(self, role: tuple, *words: int | float) -> Any:
        """The role's buffer, rewritten first if it does not hold `words` (ints as u32, floats as f32 bits)."""
        key = param_key(words)
        entry = self._bufs.get(role)
        if entry is None:
            buf = self.gpu.upload(pack_u32(key))
            self._bufs[role] = (buf, key)
            return buf
        buf, held = entry
        if held != key:
            if len(held) != len(key):
                raise ValueError(f"step parameter role {role!r} changed size ({len(held)} -> {len(key)} words)")
            self.gpu.write(buf, pack_u32(key))
            self._bufs[role] = (buf, key)
            self.rewrites += 1
        return buf
