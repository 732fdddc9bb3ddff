"""KV cache modes: which row format K and V are stored in (see `formats`), and whether K is rotated."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import KVError
from .rows import FORMATS, GROUP, RowFormat


@dataclass(frozen=True)
class Mode:
    """A cache mode: K and V row formats; rotate_k applies the q4r Hadamard rotation to K (and Q)."""

    name: str
    k: str
    v: str
    rotate_k: bool = False
    help: str = ""
    v_residual: bool = False  # grouped modes: V of the newest group kept in f32 too, quantised when it fills

    @property
    def kf(self) -> RowFormat:
        return FORMATS[self.k]

    @property
    def vf(self) -> RowFormat:
        return FORMATS[self.v]

    @property
    def grouped(self) -> bool:
        """K per channel in groups of GROUP positions, newest partial group kept in f32."""
        return self.kf.per_channel

    @property
    def group(self) -> int:
        """Positions per K group (grouped modes), else 0."""
        return self.kf.group

    @property
    def k_store(self) -> RowFormat:
        """The format the store kernel writes K in (f32 for grouped K: quantised per group later)."""
        return FORMATS["f32"] if self.grouped else self.kf

    @property
    def v_store(self) -> RowFormat:
        """The format the store kernel writes V in (f32 when V has a residual)."""
        return FORMATS["f32"] if self.v_residual else self.vf

    def row_words(self, hd: int) -> tuple[int, int]:
        return self.kf.row_words(hd), self.vf.row_words(hd)

    def bits_per_element(self, hd: int) -> float:
        """Stored bits per K/V element, scales included (c4 scales amortised over the group)."""
        return 32 * sum(self.row_words(hd)) / (2 * hd)


MODES: dict[str, Mode] = {m.name: m for m in (
    Mode("f32", "f32", "f32", help="exact f32 K/V (reference quality, 8x the bytes of 4-bit)"),
    Mode("q8", "q8", "q8", help="8-bit per row, f16 scale"),
    Mode("q4", "q4", "q4", help="4-bit per row, f16 scale (the seed's format)"),
    Mode("q4r", "q4", "q4", True, help="q4 with Hadamard-rotated K (and Q)"),
    Mode("q4b", "q4b", "q4b", help="4-bit, one f16 scale per 32 values (Q4_0-like)"),
    Mode("k8v4", "q8", "q4", help="K 8-bit per row, V 4-bit per row"),
    Mode("k8v4b", "q8", "q4b", help="K 8-bit per row, V 4-bit per 32 values"),
    Mode("kc4v4", "c4", "q4", help=f"K 4-bit per channel per {GROUP} positions (f32 residual), V 4-bit per row"),
    Mode("kc4v4b", "c4", "q4b", help=f"K 4-bit per channel per {GROUP} positions (f32 residual), V q4b"),
    Mode("k8v4a", "q8", "q4a", help="K 8-bit per row, V 4-bit asymmetric per row (scale and min)"),
    Mode("kc4av4a", "c4a", "q4a", help=f"K 4-bit asymmetric per channel per {2 * GROUP} positions "
                                       "(f32 residual), V 4-bit asymmetric per row"),
    Mode("q4res", "c4a", "q4a", help=f"kc4av4a with the newest {2 * GROUP}-position group of V in f32 too",
         v_residual=True),
)}


def get_mode(name: str) -> Mode:
    """The mode called `name`, or a KVError listing the choices."""
    try:
        return MODES[name]
    except KeyError:
        raise KVError(f"KV mode must be one of {', '.join(MODES)}, got {name!r}") from None
