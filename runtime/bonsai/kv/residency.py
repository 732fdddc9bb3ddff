"""What a VRAM budget leaves on the GPU and what a decode step must stream from host RAM, told to the user."""

from __future__ import annotations

from dataclasses import dataclass

from .layout import Layout


@dataclass(frozen=True)
class Residency:
    """A cache's windows at its full context: how many, how many keep a GPU slot, and the bytes of each.

    Attention walks every window of every layer in order on each step; with fewer slots than windows, all
    but one slot keep their window and the last one cycles through the rest (`slots.Slots._victim`), so a
    step at full context streams `windows - slots + 1` windows from the host master.
    """

    mode: str
    positions: int
    window: int
    windows: int  # layers x windows per layer
    slots: int  # window slots the budget holds (every window without one)
    slot_bytes: int

    @classmethod
    def of(cls, layout: Layout, max_slots: int) -> Residency:
        windows = layout.n_layers * layout.n_windows
        return cls(layout.mode.name, layout.max_positions, layout.window, windows, min(max_slots, windows),
                   layout.slot_bytes)

    @property
    def total_bytes(self) -> int:
        return self.windows * self.slot_bytes

    @property
    def resident_bytes(self) -> int:
        return self.slots * self.slot_bytes

    @property
    def streamed_per_token(self) -> int:
        """Bytes one decode step at full context copies from host RAM to the GPU (0: all resident)."""
        return 0 if self.slots >= self.windows else (self.windows - self.slots + 1) * self.slot_bytes

    def describe(self) -> str:
        """One line for stderr; a second, a warning with the figure, when decode must stream."""
        line = (f"KV cache: {human_size(self.total_bytes)} for {self.positions:,} positions ({self.mode}), master in host "
                f"RAM; {human_size(self.resident_bytes)} on the GPU ({self.slots} of {self.windows} windows of "
                f"{self.window:,} positions)")
        if not self.streamed_per_token:
            return line
        return (f"{line}\nwarning: a decode step at full context streams {human_size(self.streamed_per_token)} from host "
                f"RAM, so decode is bound by the host-to-GPU copy there; --vram-budget {self.total_bytes} "
                f"keeps the whole cache on the GPU")


def human_size(n: int) -> str:
    """`n` bytes in GiB, MiB or KiB (binary units, two decimals)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"
