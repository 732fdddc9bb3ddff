"""The named steps for one repository: config -> scan -> graph -> closure -> plan -> state (cached)."""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .cache import CACHE_DIR, Store, scanner_id
from .config import Config, Surface, load
from .digest import Digest, digest_file, digest_tree
from .errors import FatalError
from .facts import Facts
from .factsource import FactSource
from .plan import Plan, PlannedFile
from .statmemo import StatMemo

if TYPE_CHECKING:
    from .closure import Closure
    from .freshness import SurfaceState
    from .index import ModuleIndex
    from .verify import Reading


class Workspace:
    """One repository: its config, the digest of its source roots, and its caches."""

    def __init__(self, root: Path, use_cache: bool = True, cache_root: Path | None = None, rescan: bool = False) -> None:
        self.root = root.resolve()
        self.config: Config = load(self.root)
        self.roots = [(self.root / s).resolve() for s in self.config.source]
        self.cache_folder = (cache_root or self.root) / CACHE_DIR
        # rescan: parse every file, trusting no facts from the cache or a lock
        folder = self.cache_folder if use_cache and not rescan else None
        self.facts_store = Store(folder, "facts")
        self.plan_store = Store(folder, "plans")
        self.verify_store = Store(folder, "verify")
        # each surface's lock as last parsed or written: (sha256 of its bytes, its files)
        self.lock_store = Store(folder, "lockfiles")
        # files hashed by an earlier run whose stat is unchanged since are not read again (no cache: all are)
        self.stat_store = Store(folder, "stats")
        self.stats = StatMemo(self.stat_store.get("files")) if folder is not None else None
        self.digests = {str(root): digest_tree(str(root), memo=self.stats) for root in self.roots}
        self._digest: dict[Path, Digest] | None = None
        self._lock_texts: dict[str, str] = {}
        self._states: dict[str, SurfaceState] = {}
        # per surface, the plan (and lock text) the cache held before this run replaced it
        self._previous: dict[str, tuple[Plan, str]] = {}
        self._locks: dict[Path, dict[str, Any] | None] = {}
        self.facts = FactSource(self.root, lambda: self.digest, self.facts_store,
                                [self.root / s.dest for s in self.config.surfaces], self.lock_data, rescan)
        self._index: ModuleIndex | None = None

    @property
    def digest(self) -> dict[Path, Digest]:
        """sha256 and executable bit of every file below the source roots, by absolute path."""
        if self._digest is None:
            self._digest = {Path(root, rel): d for root, files in self.digests.items() for rel, d in files.items()}
        return self._digest

    def digest_of(self, path: Path) -> Digest:
        """The digest of a file below a source root (read now if the tree walk skipped it)."""
        return self.digest.get(path) or digest_file(str(path))

    @property
    def index(self) -> ModuleIndex:
        from .index import ModuleIndex

        if self._index is None:
            self._index = ModuleIndex(self.roots)
        return self._index

    def surfaces(self, names: tuple[str, ...]) -> list[Surface]:
        """The named surfaces (all of them when none are named)."""
        return [self.config.surface(n) for n in names] if names else list(self.config.surfaces)

    def lock_data(self, dest: Path) -> dict[str, Any] | None:
        """A dest's lock as parsed TOML, read once per run (until `wrote` says it changed)."""
        if dest not in self._locks:
            from .lock import load

            self._locks[dest] = load(dest)
        return self._locks[dest]

    def wrote(self, dest: Path, plan: Plan | None = None, lock_text: str | None = None) -> None:
        """`sync` replaced `dest` (and its lock, `lock_text`: the one rendered from `plan` unless given)."""
        self._locks.pop(dest, None)
        if plan is not None:
            surface = self.config.surface(plan.surface)
            text = self.lock_text(plan) if lock_text is None else lock_text
            self._remember_lock(surface, hashlib.sha256(text.encode()).hexdigest(), plan.by_rel())
        self.facts.wrote_lock(dest)
        self.facts_store.save()

    def facts_of(self, path: Path, target: tuple[int, int]) -> Facts:
        """The scan facts of one source file for Python `target` (cache, a lock's record, or a parse)."""
        return self.facts.facts_of(path, target)

    def read_for_verify(self, data: bytes, package: tuple[str, ...], python: tuple[int, int]) -> Reading:
        """`verify.read_file`, kept in the cache by content (the verifier still reads every file of the
        tree and resolves every import in it; only an unchanged file's parse is skipped)."""
        from .verify import read_file

        key = f"reading 2 {hashlib.sha256(data).hexdigest()}:{'/'.join(package)}:{python[0]}.{python[1]}"
        found = self.verify_store.get(key)
        if found is None:
            found = read_file(data, package, python)
            self.verify_store.put(key, found)
        return found

    def closure(self, surface: Surface) -> Closure:
        """The closure of `surface` (always built; its errors are in `.errors`)."""
        from .closure import closure

        # libcst trees are acyclic and freed by reference counting; the cyclic collector would
        # only rescan millions of short-lived nodes while parsing.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return closure(self.config, surface, self.index, lambda path: self.facts.facts_of(path, surface.python),
                           lambda path: self.facts.want(path, surface.python))
        finally:
            self.facts.parser.close()
            if collecting:
                gc.enable()
            self.facts_store.save()

    def plan(self, surface: Surface) -> Plan:
        """What `surface`'s dest must hold; reused from the cache while no source byte changed.
        A closure error raises ClosureError naming every site."""
        key = self._plan_key(surface)
        cached = self.plan_store.get(surface.name)
        if cached is not None and cached[0] == key:
            self._lock_texts[surface.name] = cached[2]
            return cached[1]
        if cached is not None:
            self._previous[surface.name] = (cached[1], cached[2])
        from .lock import render
        from .plan import make_plan

        found = self.closure(surface)
        found.raise_errors()
        python = f"{surface.python[0]}.{surface.python[1]}"
        plan = make_plan(surface.name, surface.dest, self.root, found, self.digest_of, python, scanner_id(),
                         self._namespace(surface))
        self._lock_texts[surface.name] = render(plan)
        self.plan_store.put(surface.name, (key, plan, self._lock_texts[surface.name]))
        self.plan_store.save()
        return plan

    def _namespace(self, surface: Surface) -> str:
        """The package `rewrite-imports` rewrites the copy's imports below ("" when off)."""
        if not surface.rewrite_imports:
            return ""
        from .config import TABLE, error
        from .verify import enclosing_package

        package = enclosing_package(self.root / surface.dest)
        if package is None:
            raise error(self.config.text, f"{TABLE}.surfaces.{surface.name}", "rewrite-imports",
                        f"the dest {surface.dest!r} is no package's folder (no __init__.py beside it), so there is "
                        "nothing to rewrite the imports below; vendor into a package (app/_vendor) or drop the key")
        return package

    def lock_text(self, plan: Plan) -> str:
        """The lock file `sync` writes for `plan` (rendered once, then cached with the plan)."""
        if plan.surface not in self._lock_texts:
            from .lock import render

            self._lock_texts[plan.surface] = render(plan)
        return self._lock_texts[plan.surface]

    def state(self, surface: Surface, refresh: bool = False) -> SurfaceState:
        """The surface's dest compared with its plan, computed once per run (again after a write)."""
        if refresh or surface.name not in self._states:
            from .freshness import surface_state
            from .ownership import recorded
            from .swap import interrupted

            plan = self.plan(surface)
            dest = self.root / plan.dest
            if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
                raise FatalError(f"{plan.dest}: is {'a link' if dest.is_symlink() else 'a file'}, not a folder; "
                                 f"the dest of surface {surface.name!r} is a folder that bonsai-sync alone writes: "
                                 "move the file away, or set `dest` to another path")
            self._states[surface.name] = surface_state(self.root, plan, self.lock_text(plan), interrupted(dest),
                                                       lambda path: self._locked_files(surface, path), self.stats,
                                                       lambda path: recorded(self.lock_data(path)))
            self._save_stats()
        return self._states[surface.name]

    def _save_stats(self) -> None:
        if self.stats is not None:
            merged = self.stats.merged()
            if merged != self.stats.old:
                self.stat_store.put("files", merged)
                self.stat_store.save()
                self.stats.old = merged

    def _locked_files(self, surface: Surface, dest: Path) -> dict[str, PlannedFile] | None:
        """The files the dest's lock records: the previous plan's when the lock is exactly the text
        it rendered (render is lossless, so parsing would give the same), else what a parse of these
        very bytes gave (kept in the cache by their sha256), else parsed."""
        from .lock import LOCK_NAME, files_of

        try:
            data = (dest / LOCK_NAME).read_bytes()
        except OSError:
            data = None
        previous = self._previous.get(surface.name)
        if data is not None and previous is not None and data == previous[1].encode():
            return previous[0].by_rel()
        key = hashlib.sha256(data).hexdigest() if data is not None else None
        known = self.lock_store.get(surface.name)
        if key is not None and known is not None and known[0] == key:
            return known[1]
        files = files_of(dest, self.lock_data(dest))
        if key is not None and files is not None:
            self._remember_lock(surface, key, files)
        return files

    def _remember_lock(self, surface: Surface, sha: str, files: dict[str, PlannedFile]) -> None:
        self.lock_store.put(surface.name, (sha, files))
        self.lock_store.save()

    def _plan_key(self, surface: Surface) -> str:
        hasher = hashlib.sha256(f"{__version__}\n{self.config.text}\n{surface!r}\n".encode())
        for root, files in self.digests.items():
            listing = "".join(f"{rel}\0{files[rel].sha256}\0{files[rel].executable}\n" for rel in sorted(files))
            hasher.update(f"{root}\n{listing}".encode())
        return hasher.hexdigest()


def check_surface(config: Config, name: str) -> list[str]:
    """`path: reason` for each stale file of surface `name` ([] when fresh); for other tools."""
    workspace = Workspace(config.root)
    return [f"{s.path}: {s.reason}" for s in workspace.state(workspace.config.surface(name)).stale]
