"""Quantised matrix-vector / matrix-matrix products and embedding lookup on GGML blocks.

Two kernels, chosen by the adapter when a matrix is uploaded: GPUs read the raw blocks from a
storage buffer (matmul.wgsl: lanes per row, a workgroup reduction; batches of many tokens take the
tiled matmul_tiled.wgsl instead, tiled.py); CPU adapters (lavapipe,
SwiftShader) read them through a word texture in a planar layout (planar.wgsl repacks them on the
GPU) with x copied into a texture too, each invocation owning a tile of rows x tokens
(matmul_cpu.wgsl): a CPU's texel fetch costs a fraction of a storage-buffer load.
"""

from __future__ import annotations

import struct
import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import GpuLimitError
from ..gpu.backend import round_up
from ..gpu.limits import grid, workgroups
from . import rmsnorm, tiled
from .qtypes import QType

WG = 64


# A matrix of at least TALL_ROWS rows gets TALL_LANES threads per row: with 16 the default model's 49,152-row
# output head was 12,288 workgroups and took 89-90 us a decode step on the H200, with 2 lanes 33-35 us (4: 48,
# 1: 36); the layers' 576-3,072-row matrices were fastest with 16 of 1-16 (bench/NOTES.md, commit c6ec15b).
TALL_ROWS, TALL_LANES = 16384, 2
# One token (a decode step) takes enough lanes to load all of a row's chunks in one round, up to DECODE_LANES:
# the default model's 18- and 48-chunk rows at 32 lanes instead of 16 made the decode step's layer matrices
# 1.2-1.8x faster on the H200 and decode +3-5% (bench/NOTES.md, commit bdbc0e9). Two rows per workgroup at least:
# the SwiGLU and RoPE epilogues pair rows 2i and 2i + 1 in one workgroup. Batches keep the rule of lanes_for
# (at 32 lanes a 512-token matvec prefill was 0.91x as fast).
DECODE_LANES = 32
# Q1_0 rows per workgroup of a decode step (matmul.wgsl SPREAD: each invocation covers every row of the workgroup
# over its share of the chunks, so x is loaded once per that many rows), by the matrix's height: the entry with
# the largest first number <= rows applies. More rows per workgroup load x fewer times; fewer leave more workgroups
# to spread over the SMs: this table keeps at least 512 (about four per SM of an H100) down to 2 rows. Not yet
# timed on a GPU: bench/probes/q1_probe.py times every choice per Bonsai matrix shape (bench/scale_bench.py --q1-probe).
# A power of two from 2 to 32 (pairs in one workgroup for the SwiGLU and RoPE epilogues; `red` is 32 x 65 floats).
Q1_ROWS: list[tuple[int, int]] = [(0, 2), (2048, 4), (4096, 8), (8192, 16)]
# SPREAD is off until bench/probes/q1_probe.py has timed it on a GPU against the lanes-per-row kernel every other type uses.
# It also sums a token's products in another order than a batch does (d * (+-x) per chunk, not (+-d) * x), so a
# token decoded alone would no longer equal, bit for bit, the same token inside a prompt's batch.
Q1_SPREAD = False


def lanes_for(k: int, q: QType, rows: int = 0, t: int = 2) -> int:
    """Threads per row for t tokens: TALL_LANES for a matrix of TALL_ROWS rows or more; one token: the least
    power of two covering the row's 32-weight chunks (at most DECODE_LANES); a batch: enough to cover the
    chunks without idling most of them (at most 16)."""
    chunks = k // 32
    lanes = 1
    if t == 1 and q.name == "Q1_0" and Q1_SPREAD:  # SPREAD: all WG invocations share the chunks, LANES add up each row
        return WG // q1_rows(rows)
    if t == 1 and rows < TALL_ROWS:
        while lanes < DECODE_LANES and lanes < chunks:
            lanes *= 2
        return lanes
    while lanes < 16 and lanes * 2 <= chunks:
        lanes *= 2
    return min(lanes, TALL_LANES) if rows >= TALL_ROWS else lanes


def q1_rows(rows: int) -> int:
    """Rows per workgroup of a Q1_0 decode product (`Q1_ROWS`)."""
    return [r for lo, r in Q1_ROWS if rows >= lo][-1]


# CPU kernel tiles (rows x tokens per invocation), measured on lavapipe (bench/NOTES.md)
CPU_ROWS, CPU_TOKENS = 8, 4
# 8-row tiles of 1 and 4 tokens run matmul_cpu.wgsl's main1 / main4 (no private arrays; SwiftShader runs
# them 2-3x faster than the generic `main`); False: always `main` (benchmarks compare the two)
CPU_NAMED_TILES = True
# main1's @workgroup_size: decode matmuls have few rows (576 / 8 = 72 invocations), and 64-wide groups left
# one CPU thread most of the work (lavapipe and SwiftShader decode 1.2-1.3x faster with 16; bench/NOTES.md, commit 7709cec)
CPU_DECODE_WG = 16
PLANAR_TEXELS = {"F32": 8, "F16": 4, "Q4_0": 1, "Q4_1": 1, "Q8_0": 2, "Q1_0": 1}  # value texels per block


@dataclass
class QMatrix:
    """A (rows, cols) weight matrix of GGML type `qtype`: its raw blocks in a GPU buffer (`buf`), or on a
    CPU adapter in the planar layout in a word texture (`tex`, scale words from `scale_base`)."""

    buf: Any
    qtype: QType
    rows: int
    cols: int
    name: str = ""
    tex: Any = None
    scale_base: int = 0

    def params(self, t: int, x_stride: int, y_stride: int, y_offset: int = 0, x_offset: int = 0, n1: int = 0,
               n2: int = 0, eps: float = 0.0) -> bytes:
        """The kernel's param block (u32 x 12) for t tokens; strides and offsets count floats; n1/n2 for
        OUT_SPLIT; eps for a fused RMSNorm (`dispatch(norm=...)`). Word 3 is the raw row bytes (buffer
        kernel) or the scale plane's first word (texture)."""
        third = self.scale_base if self.tex is not None else self.row_bytes
        return struct.pack("<10If1I", self.rows, self.cols, t, third, x_stride, y_stride, y_offset, x_offset, n1, n2,
                           eps, 0)

    @cached_property
    def row_bytes(self) -> int:
        return self.qtype.row_bytes(self.cols)

    @cached_property
    def lanes(self) -> int:
        """Threads per row in the matmul kernel for a batch (`lanes_for`), computed once: read every dispatch."""
        return lanes_for(self.cols, self.qtype, self.rows)

    @cached_property
    def decode_lanes(self) -> int:
        """Threads per row for one token (`lanes_for(..., t=1)`)."""
        return lanes_for(self.cols, self.qtype, self.rows, t=1)

    def lanes_at(self, t: int) -> int:
        """Threads per row for a dispatch of t tokens (or a kernel of TT = t tokens per workgroup: 1 only
        for one token, `tokens_per_group`)."""
        return self.decode_lanes if t == 1 else self.lanes


def upload_matrix(gpu: Any, raw: Any, q: QType, rows: int, cols: int, name: str = "",
                  texture: bool | None = None) -> QMatrix:
    """Upload raw GGML rows (bytes-like, rows * row_bytes) with one word of padding for `word_at`; on a
    CPU adapter (or texture=True) repacked into a word texture for the CPU kernel (`_planar`)."""
    view = memoryview(raw).cast("B")
    if view.nbytes + 8 > gpu.max_binding_bytes:
        raise GpuLimitError(f"tensor {name or '?'} ({rows} x {cols} {q.name}): {view.nbytes} bytes, above this "
                            f"adapter's maxStorageBufferBindingSize ({gpu.max_binding_bytes} bytes); one kernel "
                            "binding must hold the whole matrix")
    buf = gpu.buffer(view.nbytes + 8)
    gpu.write(buf, view)
    m = QMatrix(buf, q, rows, cols, name)
    return _planar(gpu, m) if (gpu.is_cpu if texture is None else texture) else m


def _planar(gpu: Any, m: QMatrix) -> QMatrix:
    """`m` repacked on the GPU into a word texture (planar.wgsl); its raw buffer is dropped."""
    vt, blk = PLANAR_TEXELS[m.qtype.name], _block(m)
    blocks = m.rows * (m.cols // blk)
    scale_base = blocks * vt * 4
    words = scale_base + blocks
    if words * 4 > gpu.max_binding_bytes:
        raise GpuLimitError(f"tensor {m.name or '?'} ({m.rows} x {m.cols} {m.qtype.name}): {words * 4} bytes repacked, "
                            f"above this adapter's maxStorageBufferBindingSize ({gpu.max_binding_bytes} bytes)")
    tex = gpu.word_texture(words)
    out = gpu.buffer(words * 4)
    prm = gpu.upload(struct.pack("<4I", m.rows, m.cols, m.row_bytes, scale_base))
    gpu.dispatch(gpu.kernel(__package__, "planar.wgsl", QTYPE=m.qtype.ggml_id, VT=vt, BLK=blk), [m.buf, out, prm],
                 grid(workgroups(blocks)))
    gpu.copy_to_texture(out, tex, round_up(words * 4, 16))
    gpu.flush()
    return QMatrix(None, m.qtype, m.rows, m.cols, m.name, tex, scale_base)


def _block(m: QMatrix) -> int:
    return 128 if m.qtype.name == "Q1_0" else 32


OUT_PLAIN, OUT_SWIGLU, OUT_SPLIT = 0, 1, 2
_SPARES: weakref.WeakKeyDictionary[Any, tuple[Any, Any, Any, Any]] = weakref.WeakKeyDictionary()
_TEXTURES: weakref.WeakKeyDictionary[Any, dict[int, tuple[Any, Any]]] = weakref.WeakKeyDictionary()


def spare_buffers(gpu: Any) -> tuple[Any, Any, Any, Any]:
    """Tiny buffers bound as y2/y3, the norm weights and the RoPE block when they are not used (auto layouts
    keep the bindings)."""
    if gpu not in _SPARES:
        _SPARES[gpu] = (gpu.buffer(16), gpu.buffer(16), gpu.buffer(16), gpu.buffer(16))
    return _SPARES[gpu]


def constants(m: QMatrix, tt: int, accum: bool = False, out: int = OUT_PLAIN, norm: bool = False,
              rope_hd: int = 0) -> dict[str, Any]:
    """matmul.wgsl's template constants for a buffer matrix and TT = tt tokens per workgroup."""
    lanes = m.lanes_at(tt)
    spread = tt == 1 and m.qtype.name == "Q1_0" and Q1_SPREAD
    return dict(QTYPE=m.qtype.ggml_id, WG=WG, LANES=lanes, TT=tt, ACCUM=accum, OUT=out, NORM=norm, ROPE=rope_hd > 0,
                ROPE_HD=rope_hd, SPREAD=spread, RED=(WG // lanes) * (WG + 1) if spread else 1)


def kernel(gpu: Any, m: QMatrix, tt: int, accum: bool = False, entry: str = "main", out: int = OUT_PLAIN,
           norm: bool = False, rope_hd: int = 0) -> Any:
    if m.tex is not None:
        return gpu.kernel(__package__, "matmul_cpu.wgsl", entry=entry, QTYPE=m.qtype.ggml_id,
                          VT=PLANAR_TEXELS[m.qtype.name], BLK=_block(m), R=CPU_ROWS, TT=tt, ACCUM=accum, OUT=out)
    return gpu.kernel(__package__, "matmul.wgsl", entry=entry, **constants(m, tt, accum, out, norm, rope_hd))


def fuses_norm(m: QMatrix) -> bool:
    """Whether `dispatch(norm=...)` can fold an RMSNorm of x into this matrix's product: the buffer kernels. The
    matvec's workgroup sums x^2 as rmsnorm.wgsl's does (the same bits); the tiled kernel, where it takes a batch
    (`tiled.applies`), scales each token's products after the sum (within the tiled product's bound)."""
    return m.tex is None and WG == rmsnorm.WG


def fuses_rope(m: QMatrix, t: int, head_dim: int) -> bool:
    """Whether `dispatch(rope=..., out=OUT_SPLIT)` can rotate this QKV product's Q and K rows in its epilogue
    (GGML-normal pairs over head_dim; the bits of rope.wgsl after the product): the buffer kernels, the tiled one
    where it takes this batch, the matvec where a pair's rows are in one workgroup."""
    if m.tex is not None or head_dim % 2:
        return False
    return tiled.applies(m, t) or WG // m.lanes_at(t) % 2 == 0


def _texture_of(gpu: Any, x: Any, nbytes: int) -> Any:
    """The word texture the CPU kernel reads `x` through, with `x`'s first nbytes copied in (recorded)."""
    cache = _TEXTURES.setdefault(gpu, {})
    entry = cache.get(id(x))
    if entry is None or entry[1].words * 4 < nbytes:
        entry = cache[id(x)] = (x, gpu.word_texture(int(x.size) // 4))  # keeps x alive: its id stays its own
    gpu.copy_to_texture(x, entry[1], round_up(nbytes, 16))
    return entry[1]


def tokens_per_group(t: int, cpu: bool = False) -> int:
    if t == 1:
        return 1
    return CPU_TOKENS if cpu else 8


def dispatch(gpu: Any, m: QMatrix, x: Any, y: Any, prm: Any, t: int, *, accum: bool = False,
             out: int = OUT_PLAIN, y2: Any = None, y3: Any = None, x_words: int | None = None,
             norm: Any = None, rope: tuple[Any, int] | None = None) -> None:
    """Record y[t, off + r] (+)= sum_c W[r, c] x[t, c] for t tokens; `prm` holds `m.params(...)`.

    out=OUT_SWIGLU: W's rows are interleaved (gate_i, up_i) and y[t, off + i] = silu(gate_i) * up_i.
    out=OUT_SPLIT: rows [0, n1) -> y, [n1, n1 + n2) -> y2, the rest -> y3 (n1, n2 in `prm`).
    x_words: how much of x the t tokens read (x_offset + t * x_stride; default all of x), which the
    CPU kernel copies into its texture first.
    norm: the weights of an RMSNorm applied to x first (only where `fuses_norm(m)`; eps in `prm`); batches that
    take the tiled kernel: not rmsnorm.wgsl's bits (`fuses_norm`).
    rope: (rope.wgsl's parameter block for these tokens, head_dim): GGML-normal RoPE of the Q and K rows
    in the epilogue (out=OUT_SPLIT, only where `fuses_rope(m, t, head_dim)`).
    """
    spare = spare_buffers(gpu)
    if out != OUT_SPLIT:
        y2, y3 = spare[:2]
    if norm is not None and not fuses_norm(m):
        raise ValueError(f"matmul {m.name or '?'}: this kernel cannot fuse an RMSNorm (texture matrix)")
    if rope is not None and (out != OUT_SPLIT or not fuses_rope(m, t, rope[1])):
        raise ValueError(f"matmul {m.name or '?'}: this dispatch cannot fuse RoPE (QKV split on the buffer kernel only)")
    if m.tex is not None:
        tt = tokens_per_group(t, cpu=True)
        x_tex = _texture_of(gpu, x, 4 * (x_words if x_words is not None else int(x.size) // 4))
        # main1 / main4: the 8-row tiles of one / four tokens with no private arrays (SwiftShader: 2-3x faster)
        entry = {1: "main1", 4: "main4"}.get(tt, "main") if CPU_ROWS == 8 and CPU_NAMED_TILES else "main"
        groups = (workgroups(-(-m.rows // CPU_ROWS), CPU_DECODE_WG if entry == "main1" else 64), -(-t // tt))
        gpu.dispatch(kernel(gpu, m, tt, accum, entry=entry, out=out), [m.tex, x_tex, y, prm, y2, y3], groups)
        return
    buffers = [m.buf, x, y, prm, y2, y3, spare[2] if norm is None else norm, rope[0] if rope else spare[3]]
    if tiled.applies(m, t):  # a batch: the tiled kernel (tiled.py)
        tiled.dispatch(gpu, m, buffers, t, accum, out, norm=norm is not None, rope_hd=rope[1] if rope else 0)
        return
    tt = tokens_per_group(t)
    rows_per_group = WG // m.lanes_at(t)
    groups = (-(-m.rows // rows_per_group), -(-t // tt))
    gpu.dispatch(kernel(gpu, m, tt, accum, out=out, norm=norm is not None, rope_hd=rope[1] if rope else 0),
                 buffers, groups)


def dispatch_embed(gpu: Any, m: QMatrix, ids: Any, y: Any, prm: Any, t: int) -> None:
    """Record y[t, :] = W[ids[t], :] (dequantised) for t tokens; `prm` holds `m.params(...)`."""
    groups = (workgroups(m.cols // 32), t)
    if m.tex is not None:
        ids_tex = _texture_of(gpu, ids, 4 * t)
        gpu.dispatch(kernel(gpu, m, 1, entry="embed"), [m.tex, ids_tex, y, prm], groups)
        return
    gpu.dispatch(kernel(gpu, m, 1, entry="embed"), [m.buf, ids, y, prm], groups)


def interleave_rows(raw: Any, rows_a: int) -> bytes:
    """Rows of [A; B] (each rows_a rows) reordered to A0, B0, A1, B1, ... (for OUT_SWIGLU).

    Pure Python (one slice per row, joined once) so model loading needs no array library.
    """
    view = memoryview(raw).cast("B")
    if rows_a <= 0 or view.nbytes % (2 * rows_a):
        raise ValueError(f"interleave_rows: {view.nbytes} bytes do not split into 2 x {rows_a} equal rows")
    rb = view.nbytes // (2 * rows_a)
    parts: list[memoryview] = []
    for i in range(rows_a):
        parts += (view[i * rb : (i + 1) * rb], view[(rows_a + i) * rb : (rows_a + i + 1) * rb])
    return b"".join(parts)
