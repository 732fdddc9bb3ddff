"""The named steps for one repository: config -> scan -> graph -> closure -> plan (cached)."""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .cache import CACHE_DIR, Store
from .config import Config, Surface, load
from .digest import digest_tree
from .facts import Facts
from .plan import Plan

if TYPE_CHECKING:
    import networkx as nx

    from .index import ModuleIndex


class Workspace:
    """One repository: its config, the digest of its source roots, and its caches."""

    def __init__(self, root: Path, use_cache: bool = True) -> None:
        self.root = root.resolve()
        self.config: Config = load(self.root)
        self.roots = [(self.root / s).resolve() for s in self.config.source]
        self.digests = {str(root): digest_tree(str(root)) for root in self.roots}
        self._digest: dict[Path, str] | None = None
        self._lock_texts: dict[str, str] = {}
        folder = self.root / CACHE_DIR if use_cache else None
        self.facts_store = Store(folder, "facts")
        self.plan_store = Store(folder, "plans")
        self._index: ModuleIndex | None = None

    @property
    def digest(self) -> dict[Path, str]:
        """sha256 of every file below the source roots, by absolute path."""
        if self._digest is None:
            self._digest = {Path(root, rel): sha for root, files in self.digests.items() for rel, sha in files.items()}
        return self._digest

    @property
    def index(self) -> ModuleIndex:
        from .index import ModuleIndex

        if self._index is None:
            self._index = ModuleIndex(self.roots)
        return self._index

    def surfaces(self, names: tuple[str, ...]) -> list[Surface]:
        """The named surfaces (all of them when none are named)."""
        return [self.config.surface(n) for n in names] if names else list(self.config.surfaces)

    def facts_of(self, path: Path) -> Facts:
        """The scan facts of one source file, from the cache when its content was seen before."""
        from .scan import scan

        data = path.read_bytes()
        key = self.digest.get(path) or hashlib.sha256(data).hexdigest()
        facts = self.facts_store.get(key)
        if facts is None:
            facts = scan(data.decode("utf-8", errors="replace"))
            self.facts_store.put(key, facts)
        return facts

    def graph(self, surface: Surface, strict: bool = True) -> nx.DiGraph:
        """The closure graph of `surface` (always built); errors raise ClosureError when `strict`."""
        from .closure import closure

        # libcst trees are acyclic and freed by reference counting; the cyclic collector would
        # only rescan millions of short-lived nodes while parsing.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return closure(self.config, surface, self.index, self.facts_of, strict)
        finally:
            if collecting:
                gc.enable()
            self.facts_store.save()

    def plan(self, surface: Surface) -> Plan:
        """What `surface`'s dest must hold; reused from the cache while no source byte changed."""
        key = self._plan_key(surface)
        cached = self.plan_store.get(surface.name)
        if cached is not None and cached[0] == key:
            self._lock_texts[surface.name] = cached[2]
            return cached[1]
        from .lock import render
        from .plan import make_plan

        graph = self.graph(surface)
        third_party = set(graph.graph.get("third_party", ()))
        plan = make_plan(surface.name, surface.dest, self.root, graph, self.digest, third_party)
        self._lock_texts[surface.name] = render(plan)
        self.plan_store.put(surface.name, (key, plan, self._lock_texts[surface.name]))
        self.plan_store.save()
        return plan

    def lock_text(self, plan: Plan) -> str:
        """The lock file `sync` writes for `plan` (rendered once, then cached with the plan)."""
        if plan.surface not in self._lock_texts:
            from .lock import render

            self._lock_texts[plan.surface] = render(plan)
        return self._lock_texts[plan.surface]

    def _plan_key(self, surface: Surface) -> str:
        hasher = hashlib.sha256(f"{__version__}\n{self.config.text}\n{surface!r}\n".encode())
        for root, files in self.digests.items():
            listing = "".join(f"{rel}\0{files[rel]}\n" for rel in sorted(files))
            hasher.update(f"{root}\n{listing}".encode())
        return hasher.hexdigest()
