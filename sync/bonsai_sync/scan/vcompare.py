"""Settle a comparison of what a test reads of `sys.version_info` with literal ints, for a target Python
(one rule for both scanners: `versions.py` over libcst, `astscan.py` over ast)."""

from __future__ import annotations

from typing import Any


def settle(op: Any, mine: Any, other: Any, target: tuple[int, int]) -> bool | None:
    """`op(mine, other)` where `mine` is "full" (sys.version_info), a tuple (a slice of it) or an int
    (one field) and `other` a tuple or int of literals; None when the target Python does not decide it."""
    if isinstance(mine, int) or isinstance(other, int):
        return op(mine, other) if isinstance(mine, int) and isinstance(other, int) else None
    if mine == "full":
        # sys.version_info is (major, minor, micro, ...): known to two places only
        head = tuple(other[:2])
        if head != target:
            return op(target, head)
        if len(other) > 2:
            return None
        return op((1,), ())  # longer than an equal prefix: greater
    return op(tuple(mine), tuple(other))
