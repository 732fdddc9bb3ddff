"""GGML block formats the matmul kernels read directly (`host.dequantize` is their host-side reference)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BonsaiError


class UnsupportedTensorType(BonsaiError):
    """A tensor uses a GGML type the GPU kernels cannot read; the message names tensor and type."""


@dataclass(frozen=True)
class QType:
    """One GGML block format: `block` weights stored in `nbytes` bytes."""

    name: str
    ggml_id: int  # the GGMLQuantizationType value, also the kernel's QTYPE constant
    block: int
    nbytes: int

    def row_bytes(self, ncols: int) -> int:
        return ncols // self.block * self.nbytes


# Layouts (little-endian; "f16" is IEEE half):
#   F32   4 bytes per weight.                F16   2 bytes per weight.
#   Q4_0  18 B / 32: f16 d, 16 B nibbles q; w[j] = (q_j - 8) * d; low nibbles are j < 16.
#   Q4_1  20 B / 32: f16 d, f16 m, 16 B nibbles; w[j] = q_j * d + m.
#   Q8_0  34 B / 32: f16 d, 32 int8 q; w[j] = q_j * d.
#   Q1_0  18 B / 128 (Bonsai 1-bit): f16 d, 16 B of sign bits, weight j = bit (j % 8) of byte j // 8
#         (LSB first); bit 1 -> +d, bit 0 -> -d.
QTYPES: dict[str, QType] = {
    q.name: q
    for q in (
        QType("F32", 0, 1, 4),
        QType("F16", 1, 1, 2),
        QType("Q4_0", 2, 32, 18),
        QType("Q4_1", 3, 32, 20),
        QType("Q8_0", 8, 32, 34),
        QType("Q1_0", 41, 128, 18),
    )
}
BY_ID = {q.ggml_id: q for q in QTYPES.values()}


def qtype(name_or_id: str | int, *, tensor: str = "?") -> QType:
    """The QType for a GGML type name or id; unsupported types raise naming the tensor."""
    q = BY_ID.get(name_or_id) if isinstance(name_or_id, int) else QTYPES.get(name_or_id)
    if q is None:
        raise UnsupportedTensorType(
            f"tensor {tensor!r}: GGML type {name_or_id} is not supported by the GPU kernels "
            f"(supported: {', '.join(QTYPES)})"
        )
    return q
