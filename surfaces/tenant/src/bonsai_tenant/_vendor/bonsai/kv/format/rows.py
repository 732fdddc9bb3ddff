"""The KV row formats as data (bits, block, per-channel group, asymmetry) and their word counts.

What the bits mean, and the numpy encoder/decoder that is the kernels' oracle: `codec`.
"""

from __future__ import annotations

from dataclasses import dataclass

GROUP = 32  # positions per c4 group (c4a: 2 * GROUP)


@dataclass(frozen=True)
class RowFormat:
    """How one row is stored: value bits (32 = f32), values per scale (0 = whole row), per-channel
    groups of `group` positions (0 = per row), asymmetric (scale and min) or symmetric."""

    name: str
    bits: int
    block: int = 0
    group: int = 0
    asym: bool = False

    @property
    def per_channel(self) -> bool:
        return self.group > 0

    @property
    def qmax(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def off(self) -> int:
        return 1 << (self.bits - 1)

    def block_size(self, hd: int) -> int:
        return self.block or hd

    def value_words(self, hd: int) -> int:
        return hd if self.bits == 32 else hd * self.bits // 32

    def scale_words(self, hd: int) -> int:
        if self.bits == 32:
            return 0
        if self.per_channel:
            return hd // self.group if self.asym else hd // (2 * self.group)
        if self.asym:
            return hd // self.block_size(hd)
        return -(-(hd // self.block_size(hd)) // 2)

    def row_words(self, hd: int) -> int:
        """u32 words per stored row of `hd` values (c4: averaged over the group, exact)."""
        self.check(hd)
        return self.value_words(hd) + self.scale_words(hd)

    def check(self, hd: int) -> None:
        need = 64 if self.per_channel else max(8, self.block)
        if self.bits != 32 and hd % need:
            raise ValueError(f"{self.name} rows need head_dim % {need} == 0, got {hd}")


FORMATS = {f.name: f for f in (
    RowFormat("f32", 32), RowFormat("q8", 8), RowFormat("q4", 4), RowFormat("q4b", 4, 32),
    RowFormat("q4a", 4, 0, 0, True), RowFormat("c4", 4, 0, GROUP), RowFormat("c4a", 4, 0, 2 * GROUP, True),
)}


def format_constants(prefix: str, f: RowFormat, head_dim: int) -> dict[str, int]:
    """The WGSL template constants {{K_BITS}}, {{K_BLOCK}}, {{K_WORDS}}, {{K_ASYM}} (or V_...) of a row format."""
    return {f"{prefix}_BITS": f.bits, f"{prefix}_BLOCK": f.block_size(head_dim),
            f"{prefix}_WORDS": f.row_words(head_dim), f"{prefix}_ASYM": f.asym}


def decode_constants(kf: RowFormat, vf: RowFormat, head_dim: int) -> dict[str, object]:
    """Every constant row_format.wgsl needs to decode K rows of `kf` and V rows of `vf`."""
    consts: dict[str, object] = {**format_constants("K", kf, head_dim), **format_constants("V", vf, head_dim)}
    if kf.per_channel:
        consts["K_BLOCK"] = 1  # unused: c4 scales are per channel
    return {**consts, "HEAD_DIM": head_dim, "K_C4": kf.per_channel, "GROUP": kf.group or GROUP}
