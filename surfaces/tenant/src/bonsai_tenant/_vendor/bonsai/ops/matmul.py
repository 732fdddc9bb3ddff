"""Quantised matrix-vector / matrix-matrix products and embedding lookup on raw GGML blocks."""

from __future__ import annotations

import struct
import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import GpuLimitError
from .qtypes import QType

WG = 64


def lanes_for(k: int, q: QType) -> int:
    """Threads per row: enough to cover the row's 32-weight chunks without idling most of them."""
    chunks = k // 32
    lanes = 1
    while lanes < 16 and lanes * 2 <= chunks:
        lanes *= 2
    return lanes


@dataclass
class QMatrix:
    """A (rows, cols) weight matrix of GGML type `qtype`, its raw blocks in one GPU buffer."""

    buf: Any
    qtype: QType
    rows: int
    cols: int
    name: str = ""

    @cached_property
    def row_bytes(self) -> int:
        return self.qtype.row_bytes(self.cols)

    @cached_property
    def lanes(self) -> int:
        """Threads per row in the matmul kernel (`lanes_for`), computed once: it is read every dispatch."""
        return lanes_for(self.cols, self.qtype)


def upload_matrix(gpu: Any, raw: Any, q: QType, rows: int, cols: int, name: str = "") -> QMatrix:
    """Upload raw GGML rows (bytes-like, rows * row_bytes) with one word of padding for `word_at`."""
    view = memoryview(raw).cast("B")
    if view.nbytes + 8 > gpu.max_binding_bytes:
        raise GpuLimitError(f"tensor {name or '?'} ({rows} x {cols} {q.name}): {view.nbytes} bytes, above this "
                            f"adapter's maxStorageBufferBindingSize ({gpu.max_binding_bytes} bytes); one kernel "
                            "binding must hold the whole matrix")
    buf = gpu.buffer(view.nbytes + 8)
    gpu.write(buf, view)
    return QMatrix(buf, q, rows, cols, name)


def params(n: int, k: int, t: int, row_bytes: int, x_stride: int, y_stride: int, y_offset: int = 0,
           x_offset: int = 0, n1: int = 0, n2: int = 0) -> bytes:
    """The kernel's param block (u32 x 12); strides and offsets count floats; n1/n2 for OUT=2 (split)."""
    return struct.pack("<12I", n, k, t, row_bytes, x_stride, y_stride, y_offset, x_offset, n1, n2, 0, 0)


OUT_PLAIN, OUT_SWIGLU, OUT_SPLIT = 0, 1, 2
_SPARES: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


def _spare(gpu: Any) -> tuple[Any, Any]:
    """Two tiny buffers bound as y2/y3 when they are not written (auto layouts keep both bindings)."""
    if gpu not in _SPARES:
        _SPARES[gpu] = (gpu.buffer(16), gpu.buffer(16))
    return _SPARES[gpu]


def kernel(gpu: Any, m: QMatrix, tt: int, accum: bool = False, entry: str = "main", out: int = OUT_PLAIN) -> Any:
    return gpu.kernel(__package__, "matmul.wgsl", entry=entry, QTYPE=m.qtype.ggml_id, WG=WG,
                      LANES=m.lanes, TT=tt, ACCUM=accum, OUT=out)


def tokens_per_group(t: int) -> int:
    return 1 if t == 1 else 8


def dispatch(gpu: Any, m: QMatrix, x: Any, y: Any, prm: Any, t: int, *, accum: bool = False,
             out: int = OUT_PLAIN, y2: Any = None, y3: Any = None) -> None:
    """Record y[t, off + r] (+)= sum_c W[r, c] x[t, c] for t tokens; `prm` holds `params(...)`.

    out=OUT_SWIGLU: W's rows are interleaved (gate_i, up_i) and y[t, off + i] = silu(gate_i) * up_i.
    out=OUT_SPLIT: rows [0, n1) -> y, [n1, n1 + n2) -> y2, the rest -> y3 (n1, n2 in `prm`).
    """
    tt = tokens_per_group(t)
    rows_per_group = WG // m.lanes
    groups = (-(-m.rows // rows_per_group), -(-t // tt))
    if out != OUT_SPLIT:
        y2, y3 = _spare(gpu)
    bufs = [m.buf, x, y, prm, y2, y3]
    gpu.dispatch(kernel(gpu, m, tt, accum, out=out), bufs, groups)


def dispatch_embed(gpu: Any, m: QMatrix, ids: Any, y: Any, prm: Any, t: int) -> None:
    """Record y[t, :] = W[ids[t], :] (dequantised) for t tokens; `prm` holds `params(...)`."""
    groups = (-(-(m.cols // 32) // WG), t)
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
