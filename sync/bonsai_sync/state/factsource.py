"""Where a source file's scan facts come from: the cache, a lock's record of the very same bytes
(sha256, Python and scanner all equal), or a parse; so a cold run parses only what changed."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cache import Store, scanner_id
from ..errors import FatalError
from ..plan.digest import Digest
from ..scan.facts import Facts
from ..scan.pool import Parser


class FactSource:
    """Facts by content: `sha256:python` keys, so a record of other bytes can never answer."""

    def __init__(self, root: Path, digest: Callable[[], dict[Path, Digest]], store: Store, dests: list[Path],
                 lock_data: Callable[[Path], dict[str, Any] | None], rescan: bool = False) -> None:
        self.root = root
        self._digest = digest
        self.store = store
        self.dests = dests
        self._lock_data = lock_data
        # rescan: trust no lock record (the caller passes a store that reads no cache either)
        self.rescan = rescan
        self.parser = Parser()
        # the records this run read from locks (`sha256:python -> encoded facts`)
        self.recorded: dict[str, str] = {}
        self._merged = False
        self._keys: dict[tuple[Path, tuple[int, int]], str] = {}

    def facts_of(self, path: Path, target: tuple[int, int]) -> Facts:
        """The facts of one source file for Python `target`."""
        key = self.key(path, target)
        facts = self._known(key)
        if facts is None:
            shown = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)
            facts = self.parser.get(key, path, target, lambda: FatalError(
                f"{shown}: changed while bonsai-sync was reading it; run the command again"))
            self.store.put(key, facts)
        return facts

    def want(self, path: Path, target: tuple[int, int]) -> None:
        """Announce a file `facts_of` will be asked for, so that workers can parse it ahead."""
        key = self.key(path, target)
        if self._known(key) is None:
            self.parser.want(key, path, target)

    def _known(self, key: str) -> Facts | None:
        """From the cache, or (read at the first miss) from the locks' records."""
        facts = self.store.get(key)
        if facts is None and not self._merged:
            self._merge_locks()
            facts = self.store.get(key)
        return facts

    def _merge_locks(self) -> None:
        """Put every lock's records into the store, skipping a lock whose records the cache already
        holds (same file: inode, size, mtime). Skipping can only cost a parse: keys are content."""
        from ..scan.factcodec import decode
        from ..write.lock import recorded_scans

        self._merged = True
        if self.rescan:
            return
        for dest in self.dests:
            seen = _signature(dest)
            if seen is not None and self.store.get(f"lock {dest}") == seen:
                continue
            records = recorded_scans(self._lock_data(dest), scanner_id())
            self.recorded.update(records)
            for key, text in records.items():
                try:
                    facts = decode(text)
                except ValueError:
                    continue  # a damaged record: the file is parsed (and the rendered lock differs)
                if self.store.get(key) is None:
                    self.store.put(key, facts)
            if seen is not None:
                self.store.put(f"lock {dest}", seen)

    def wrote_lock(self, dest: Path) -> None:
        """`sync` just wrote `dest`'s lock from facts this store holds: no need to read it back."""
        seen = _signature(dest)
        if seen is not None and not self.rescan:
            self.store.put(f"lock {dest}", seen)

    def key(self, path: Path, target: tuple[int, int]) -> str:
        """`sha256:major.minor` of the file's bytes now (from the run's digest when it has them)."""
        key = self._keys.get((path, target))
        if key is None:
            digest = self._digest().get(path)
            sha = digest.sha256 if digest else hashlib.sha256(path.read_bytes()).hexdigest()
            key = self._keys[(path, target)] = f"{sha}:{target[0]}.{target[1]}"
        return key


def _signature(dest: Path) -> tuple[int, int, int] | None:
    from ..write.lock import LOCK_NAME

    try:
        info = os.stat(dest / LOCK_NAME)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns
