"""The tiled matmul for batches on GPU adapters (matmul_tiled.wgsl): which tile, and when it is taken.

Prefill multiplies many tokens by the same weights; the matvec kernel (matmul.wgsl) decodes every weight
again for each group of 8 tokens, the tiled kernel once per BN-token tile, from workgroup memory.
`matmul.dispatch` takes it for batches of at least `MIN_TOKENS` tokens on buffer (non-texture) matrices, with
the RMSNorm before the product and the QKV product's RoPE folded in where asked; decode steps keep the matvec.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from ..errors import GpuLimitError
from ..gpu.limits import workgroups

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

    @property
    def items(self) -> tuple[float, float]:
        """(weight, activation) items each invocation stages per chunk: the kernel's NW = 4 BM / WG and
        NX = 8 BN / WG (a fraction where they do not divide)."""
        return 4 * self.bm / self.invocations, 8 * self.bn / self.invocations

    def check(self, max_invocations: int) -> None:
        """Raise ValueError for a tile the kernel cannot run, GpuLimitError for one this adapter cannot."""
        if self.tm not in (4, 8) or self.bm % self.tm or self.bn % 4 or min(self.bm, self.bn) <= 0:
            raise ValueError(f"tile {self}: TM must be 4 or 8 and divide BM, BN a multiple of 4")
        if (self.bm + self.bn) * 32 * 4 > WORKGROUP_BYTES:
            raise ValueError(f"tile {self}: (BM + BN) x 32 floats exceed {WORKGROUP_BYTES} bytes of workgroup memory")
        weight_items, activation_items = self.items
        if weight_items not in (1, 2) or activation_items not in (2, 4):
            raise ValueError(f"tile {self}: each invocation must stage 1 or 2 weight items (4 BM / invocations) and "
                             "2 or 4 activation items (8 BN / invocations) per chunk, e.g. 64x64x4, 64x64x8, 32x32x4")
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


# The tile of a matrix (`tile_for`): eight rows per invocation where the matrix has more rows than columns
# (the default model's QKV and gate/up: 68-70 / 108-110 us against 77-79 / 141-143 with four, roofline
# probe at 512 tokens on the H200), four elsewhere (wo, down: four rows' twice as many invocations per
# workgroup hide more latency in their 72 workgroups; 66-71 / 135-137 us against 67-69 / 139-149).
# bench/NOTES.md, commit c0f6f87. Per matrix, not per batch: warm-up compiles every kernel a request meets.
NARROW, WIDE = Tile(64, 64, 4), Tile(64, 64, 8)
TILE: Tile | None = None  # a tile for every matrix (tests, benches); None: `tile_for`'s choice


def tile_for(m: Any) -> Tile:
    """The tile the tiled kernel runs matrix `m` with: TILE where set, else WIDE or NARROW by its shape."""
    if TILE is not None:
        return TILE
    return WIDE if m.rows > m.cols else NARROW


# Batches of at least this many tokens go tiled; None: never (the matvec only). With its accumulators in named
# vectors the tiled kernel runs the default model's 512-token matmuls 4-7x faster than with them in an array
# on the H200 (bench/roofline_probe.py; bench/NOTES.md, commit 1063e54); with an array it was no faster than the
# matvec (commit 73ff7b4). `decode_bench.py --prefill-kernels` compares.
ON_THRESHOLD = 32
MIN_TOKENS: int | None = ON_THRESHOLD


def applies(m: Any, t: int) -> bool:
    """Whether `matmul.dispatch` takes the tiled kernel for `t` tokens of matrix `m`."""
    return MIN_TOKENS is not None and t >= MIN_TOKENS and m.tex is None and m.cols % 32 == 0


# Split K of plain products (wo and down in the default model) until the grid has SPLIT_GROUPS workgroups, in parts
# of at least MIN_PART_CHUNKS chunks, at most MAX_SPLIT parts: their 72 tiles of a 512-token step leave most of an
# H100's 132 SMs idle (four parts: 57.5 -> 35.1 us a product plus 3.8 us for the sum, bench/NOTES.md, commit 191e4e0).
# The QKV product (120 tiles, eight rows per invocation) split four ways gained nothing there (59.3 -> 55.3 + 3.9 us),
# so the split and SwiGLU stores never split. None: never. split_sum.wgsl adds the parts, in part order.
SPLIT_GROUPS: int | None = 256
MAX_SPLIT, MIN_PART_CHUNKS = 4, 4
_PARTS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # per device: the parts' buffer


def grid(m: Any, t: int, tile: Tile) -> tuple[int, int]:
    """Workgroups of the tiled product of `t` tokens of `m`: (row tiles, token tiles)."""
    return -(-m.rows // tile.bm), -(-t // tile.bn)


def split_for(m: Any, t: int, out: int, tile: Tile) -> int:
    """Parts of K the tiled kernel sums apart for `t` tokens of `m` (1: none)."""
    if SPLIT_GROUPS is None or out != 0:
        return 1
    rows, tokens = grid(m, t, tile)
    groups, chunks, split = rows * tokens, m.cols // 32, 1
    while split < MAX_SPLIT and groups * split < SPLIT_GROUPS and chunks // (2 * split) >= MIN_PART_CHUNKS:
        split *= 2
    return split


def kernel(gpu: Any, m: Any, accum: bool, out: int, tile: Tile, split: int = 1, norm: bool = False,
           rope_hd: int = 0) -> Any:
    tile.check(gpu.limits.max_invocations)
    return gpu.kernel(__package__, "matmul_tiled.wgsl", QTYPE=m.qtype.ggml_id, BM=tile.bm, BN=tile.bn, TM=tile.tm,
                      ACCUM=accum, OUT=out, SPLIT=split, NORM=norm, ROPE=rope_hd > 0, ROPE_HD=rope_hd)


def dispatch(gpu: Any, m: Any, buffers: list[Any], t: int, accum: bool, out: int, norm: bool = False,
             rope_hd: int = 0) -> None:
    """Record the tiled product; `buffers` as matmul.wgsl binds them (the norm's weights and RoPE's block, or
    spare buffers, last); `norm`: x is normed first (eps in the params), `rope_hd`: RoPE's head width (OUT 2)."""
    tile = tile_for(m)
    groups = grid(m, t, tile)
    split = split_for(m, t, out, tile)
    if split == 1:
        gpu.dispatch(kernel(gpu, m, accum, out, tile, norm=norm, rope_hd=rope_hd), buffers, groups)
        return
    w, x, y, prm, _, y3, nw, rp = buffers
    parts = _parts(gpu, split * t * m.rows * 4)
    gpu.dispatch(kernel(gpu, m, False, out, tile, split, norm=norm), [w, x, y, prm, parts, y3, nw, rp],
                 (*groups, split))
    gpu.dispatch(gpu.kernel(__package__, "split_sum.wgsl", SPLIT=split, ACCUM=accum), [parts, y, prm],
                 workgroups(t * m.rows, 256))


def _parts(gpu: Any, nbytes: int) -> Any:
    """The device's buffer for split K's parts, at least `nbytes` (grown as needed, kept for its later products)."""
    buf = _PARTS.get(gpu)
    if buf is None or int(buf.size) < nbytes:
        buf = _PARTS[gpu] = gpu.buffer(nbytes)
    return buf
