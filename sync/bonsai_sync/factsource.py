"""Where a source file's scan facts come from: the cache, a lock's record of the very same bytes
(sha256, Python and scanner all equal), or a parse; so a cold run parses only what changed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from .cache import Store, scanner_id
from .digest import Digest
from .errors import FatalError
from .facts import Facts
from .scanpool import Parser


class FactSource:
    """Facts by content: `sha256:python` keys, so a record of other bytes can never answer."""

    def __init__(self, root: Path, digest: Callable[[], dict[Path, Digest]], store: Store, dests: list[Path],
                 rescan: bool = False) -> None:
        self.root = root
        self._digest = digest
        self.store = store
        self.dests = dests
        # rescan: trust no lock record (the caller passes a store that reads no cache either)
        self.rescan = rescan
        self.parser = Parser()
        self._recorded: dict[str, str] | None = None

    def facts_of(self, path: Path, target: tuple[int, int]) -> Facts:
        """The facts of one source file for Python `target`."""
        key = self.key(path, target)
        facts = self.store.get(key)
        if facts is None:
            facts = self._from_lock(key)
            if facts is None:
                shown = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)
                facts = self.parser.get(key, path, target, lambda: FatalError(
                    f"{shown}: changed while bonsai-sync was reading it; run the command again"))
            self.store.put(key, facts)
        return facts

    def want(self, path: Path, target: tuple[int, int]) -> None:
        """Announce a file `facts_of` will be asked for, so that workers can parse it ahead."""
        key = self.key(path, target)
        if self.store.get(key) is None and key not in self.recorded:
            self.parser.want(key, path, target)

    @property
    def recorded(self) -> dict[str, str]:
        """`sha256:python -> encoded facts` that the surfaces' locks record for this scanner ({} with rescan)."""
        if self._recorded is None:
            from .lock import recorded_scans

            self._recorded = {}
            if not self.rescan:
                for dest in self.dests:
                    self._recorded.update(recorded_scans(dest, scanner_id()))
        return self._recorded

    def _from_lock(self, key: str) -> Facts | None:
        text = self.recorded.get(key)
        if text is None:
            return None
        from .factcodec import decode

        try:
            return decode(text)
        except ValueError:
            return None  # a damaged record: parse the file (the rendered lock then differs from it)

    def key(self, path: Path, target: tuple[int, int]) -> str:
        """`sha256:major.minor` of the file's bytes now (from the run's digest when it has them)."""
        digest = self._digest().get(path)
        sha = digest.sha256 if digest else hashlib.sha256(path.read_bytes()).hexdigest()
        return f"{sha}:{target[0]}.{target[1]}"
