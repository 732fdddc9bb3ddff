"""The tiled matmul for batches on GPU adapters (matmul_tiled.wgsl): which tile, and when it is taken.

Prefill multiplies many tokens by the same weights; the matvec kernel (matmul.wgsl) decodes every weight
again for each group of 8 tokens, the tiled kernel once per BN-token tile, from workgroup memory.
`matmul.dispatch` takes it, once switched on (`MIN_TOKENS`; off by default, see there), for batches of
at least `MIN_TOKENS` tokens on buffer (non-texture) matrices without a fused norm; decode steps keep
the matvec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import GpuLimitError

WORKGROUP_BYTES = 16384  # WebGPU's guaranteed maxComputeWorkgroupStorageSize: the tiles must fit it


@dataclass(frozen=True)
class Tile:
    """BM rows x BN tokens of y per workgroup; each invocation owns TM rows x 4 tokens of it."""

    bm: int = 64
    bn: int = 64
    tm: int = 4

    @property
    def invocations(self) -> int:
        return self.bm // self.tm * (self.bn // 4)

    def check(self, max_invocations: int) -> None:
        """Raise ValueError for a tile the kernel cannot run, GpuLimitError for one this adapter cannot."""
        if self.tm % 4 or self.bm % self.tm or self.bn % 4 or min(self.bm, self.bn, self.tm) <= 0:
            raise ValueError(f"tile {self}: TM must be a multiple of 4 dividing BM, BN a multiple of 4")
        if (self.bm + self.bn) * 32 * 4 > WORKGROUP_BYTES:
            raise ValueError(f"tile {self}: (BM + BN) x 32 floats exceed {WORKGROUP_BYTES} bytes of workgroup memory")
        if self.invocations > max_invocations:
            raise GpuLimitError(f"tile {self}: {self.invocations} invocations per workgroup, above this adapter's "
                                f"maxComputeInvocationsPerWorkgroup ({max_invocations})")

    @classmethod
    def parse(cls, text: str) -> Tile:
        """'64x64x4' (BM x BN x TM) -> Tile, checked."""
        try:
            bm, bn, tm = (int(v) for v in text.lower().split("x"))
        except ValueError as exc:
            raise ValueError(f"tile {text!r}: expected BMxBNxTM, e.g. 64x64x4") from exc
        tile = cls(bm, bn, tm)
        tile.check(1 << 30)
        return tile


TILE = Tile()
# Batches of at least this many tokens go tiled; None: never (the matvec only). Off by default: on the
# H200 (bench/NOTES.md, session 8) the tiled kernel prefilled 512 tokens at 0.95-0.96x the matvec's rate
# in 512-token steps and 0.57x in the engine's 128-token steps (its gate/up matmul still takes ~1 ms,
# ~1.8 TFLOP/s). `decode_bench.py --prefill-kernels tiled,...` and ON_THRESHOLD turn it on to tune it.
ON_THRESHOLD = 32
MIN_TOKENS: int | None = None


def applies(m: Any, t: int, norm: bool) -> bool:
    """Whether `matmul.dispatch` takes the tiled kernel for `t` tokens of matrix `m`."""
    return MIN_TOKENS is not None and t >= MIN_TOKENS and m.tex is None and not norm and m.cols % 32 == 0


def kernel(gpu: Any, m: Any, accum: bool, out: int) -> Any:
    TILE.check(gpu.limits.max_invocations)
    return gpu.kernel(__package__, "matmul_tiled.wgsl", QTYPE=m.qtype.ggml_id, BM=TILE.bm, BN=TILE.bn, TM=TILE.tm,
                      ACCUM=accum, OUT=out)


def dispatch(gpu: Any, m: Any, buffers: list[Any], t: int, accum: bool, out: int) -> None:
    """Record the tiled product; `buffers` as matmul.wgsl binds them, without the norm weights."""
    gpu.dispatch(kernel(gpu, m, accum, out), buffers, (-(-m.rows // TILE.bm), -(-t // TILE.bn)))
