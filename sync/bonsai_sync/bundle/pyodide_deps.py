"""The third-party packages a Pyodide bundle carries: the pure-Python files of installed distributions.

Pyodide provides `js` and `pyodide` itself; every other third-party import name the extension's copy
declares (jinja2 for the chat template) is found in the building environment, with the
distributions it requires (MarkupSafe), and its files are copied as they are installed except what
Pyodide cannot or need not load: compiled modules (a package's optional speedups; a required one
fails the page's import, which the browser tests exercise), C sources and installer bookkeeping.
METADATA and license files travel with the code.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path, PurePosixPath

from ..errors import BuildError
from .deps import requirement_closure
from .stage import CACHES, skipped

PYODIDE_PROVIDES = frozenset({"js", "pyodide", "pyodide_js"})
_SKIP_SUFFIXES = (".so", ".pyd", ".dylib", ".c", ".h", ".pyx")
_BOOKKEEPING = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")


def distributions_for(import_names: tuple[str, ...], where: Path) -> list[metadata.Distribution]:
    """The installed distributions providing `import_names` (minus Pyodide's own) and what they require."""
    wanted = sorted(set(import_names) - PYODIDE_PROVIDES)
    providers = metadata.packages_distributions()
    missing = [name for name in wanted if name not in providers]
    if missing:
        raise BuildError(f"{where}: the extension imports {', '.join(missing)}, which no installed distribution "
                         "provides; install it into the building environment")
    return requirement_closure(sorted({providers[name][0] for name in wanted}), set(), where)


def pure_files(dists: list[metadata.Distribution]) -> dict[str, Path]:
    """Every file Pyodide loads from `dists`, keyed by its path relative to site-packages."""
    out: dict[str, Path] = {}
    for dist in dists:
        base = Path(str(dist.locate_file(""))).resolve()
        for file in dist.files or []:
            src = Path(str(dist.locate_file(file))).resolve()
            rel = PurePosixPath(file.as_posix())
            if not src.is_relative_to(base) or not src.is_file() or skipped(Path(file), CACHES):
                continue  # scripts installed outside site-packages, caches
            if rel.name in _BOOKKEEPING or rel.suffix in _SKIP_SUFFIXES:
                continue
            out[src.relative_to(base).as_posix()] = src
    return out
