"""Row interleave (the fused gate/up matrix) in pure Python, byte for byte the numpy oracle's."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.ops import matmul as mm
from tests.helpers.ops import interleave_rows_reference


@pytest.mark.parametrize("rows_a,row_bytes,seed", [(1, 1, 0), (3, 20, 1), (40, 80, 2), (7, 34, 3)])
def test_interleave_rows_is_byte_identical_to_the_numpy_transpose(rows_a, row_bytes, seed):
    raw = np.random.default_rng(seed).integers(0, 256, 2 * rows_a * row_bytes, dtype=np.uint8).tobytes()
    got = mm.interleave_rows(raw, rows_a)
    assert isinstance(got, bytes)
    assert got == interleave_rows_reference(raw, rows_a)
    assert mm.interleave_rows(memoryview(raw), rows_a) == got  # any bytes-like input


def test_interleave_check_catches_a_swapped_order():
    """Mutation: B0, A0, B1, A1, ... (A and B swapped) must differ from the reference."""
    rows_a, rb = 5, 18
    raw = np.random.default_rng(7).integers(0, 256, 2 * rows_a * rb, dtype=np.uint8).tobytes()
    swapped = mm.interleave_rows(raw[rows_a * rb:] + raw[: rows_a * rb], rows_a)
    assert swapped != interleave_rows_reference(raw, rows_a)
    assert mm.interleave_rows(raw, rows_a) == interleave_rows_reference(raw, rows_a)


def test_interleave_rejects_bytes_that_do_not_split_into_equal_rows():
    with pytest.raises(ValueError, match="do not split into 2 x 3 equal rows"):
        mm.interleave_rows(bytes(20), 3)
