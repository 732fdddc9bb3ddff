"""NumpyKVCache: the KV cache with its host master readable as numpy and grouped modes' host math in numpy."""

from __future__ import annotations

from .cache import KVCache


class NumpyKVCache(KVCache):
    """Placeholder while the numpy-free KVCache split lands (same constructor as KVCache)."""
