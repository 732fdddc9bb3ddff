"""Errors of the KV cache package."""

from ..errors import BonsaiError


class KVError(BonsaiError):
    """A KV cache was built or used with inconsistent shapes, positions or budgets."""


class NonFiniteKVError(KVError):
    """A K/V row holds NaN/inf (or a magnitude the 4-bit f16 scale cannot hold); it was not cached."""
