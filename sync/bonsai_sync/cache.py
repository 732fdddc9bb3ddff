"""On-disk caches keyed by content hash: scan facts per file, and whole plans per surface."""

from __future__ import annotations

import functools
import os
import pickle
from hashlib import sha256
from pathlib import Path
from typing import Any

from . import __version__

CACHE_DIR = ".bonsai-sync-cache"
# bump when the scanner's output changes shape or meaning, so old facts are not reused
SCANNER_VERSION = "2"


@functools.cache
def scanner_id() -> str:
    """SCANNER_VERSION and a hash of the scanner's own source (scan/, its process pool aside): facts
    another scanner made are never reused, from the cache or from a lock."""
    here = Path(__file__).parent
    hasher = sha256(SCANNER_VERSION.encode())
    for path in sorted(p for p in (here / "scan").glob("*.py") if p.name != "pool.py"):
        hasher.update(path.name.encode() + b"\0" + path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return f"{SCANNER_VERSION}-{hasher.hexdigest()[:12]}"


def ensure_folder(folder: Path) -> None:
    """Create the cache folder (or one below it) with a .gitignore that keeps it out of commits."""
    folder.mkdir(parents=True, exist_ok=True)
    top = folder if folder.name == CACHE_DIR else next(p for p in folder.parents if p.name == CACHE_DIR)
    ignore = top / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")


class Store:
    """One pickled dict in the cache dir; loaded on first use, written back only when changed.
    A missing or unreadable cache is simply empty (it is only ever an optimisation)."""

    def __init__(self, folder: Path | None, name: str) -> None:
        self.path = folder / f"{name}-{__version__}-{scanner_id()}.pickle" if folder else None
        self._data: dict[str, Any] | None = None
        self.dirty = False

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            self._data = {}
            if self.path is not None:
                try:
                    self._data = pickle.loads(self.path.read_bytes())
                except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
                    self._data = {}
        return self._data

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.dirty = True

    def save(self) -> None:
        if not self.dirty or self.path is None:
            return
        try:
            ensure_folder(self.path.parent)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(self.data, protocol=pickle.HIGHEST_PROTOCOL))
            tmp.replace(self.path)
        except OSError:
            pass  # a read-only checkout still works, just without a warm cache
        self.dirty = False
