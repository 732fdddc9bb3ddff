"""Build dist/bonsai-extension.zip: manifest, page, Pyodide core, the synced closure and the page's Python.

Layout inside the zip (what Chromium loads as the unpacked/packed extension):

    manifest.json background.js panel.* page.*   hand-written, from surfaces/extension/
    ui/           the pages' shared JavaScript modules, from surfaces/extension/ui/
    pyodide/      the Pyodide core from npm's `pyodide` package (fetch_pyodide.sh puts it in .cache/)
    python/       one sys.path root: the synced closure (surfaces/extension/vendor/), the
                  extension's own package (surfaces/extension/app/bonsai_extension/) and the pure-
                  Python third-party packages the closure declares (jinja2; see pyodide_deps)
    python/files.json   every file under python/, sorted; ui/boot.js copies them into Pyodide's FS

The zip is reproducible: entries sorted, fixed timestamps and permissions, so the same inputs give
the same bytes.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from ..config import load as load_config
from ..errors import UsageError
from .pyodide_deps import distributions_for, pure_files

ZIP_NAME = "bonsai-extension.zip"
PAGE_FILES = ("manifest.json", "background.js", "panel.html", "panel.js", "panel.css", "page.html", "page.js",
              "page.css")
UI_DIR = "ui"  # every file in it ships
# What loadPyodide fetches at start; the rest of the npm package (types, maps, consoles) stays out.
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
PYTHON_SUFFIXES = (".py", ".wgsl", ".json", ".txt")
# What the page's own Python imports or loads from the synced closure (see app/bonsai_extension).
CLOSURE_NEEDS = {
    "bonsai/gpu/browser.py": "bonsai.gpu.browser",
    "bonsai/gguf/__init__.py": "bonsai.gguf",
    "bonsai/kv/attention/serial.wgsl": "bonsai/**/*.wgsl (data)",
}
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_SKIP_DIRS = {"__pycache__"}


def surface_dir(repo_root: Path) -> Path:
    return Path(repo_root) / "surfaces" / "extension"


def default_pyodide_dir(repo_root: Path, project_dir: Path | None = None) -> Path:
    """$BONSAI_PYODIDE_DIR, else the npm cache fetch_pyodide.sh fills (in the extension's folder)."""
    env = os.environ.get("BONSAI_PYODIDE_DIR")
    folder = project_dir if project_dir is not None else surface_dir(repo_root)
    return Path(env) if env else Path(folder) / ".cache" / "node_modules" / "pyodide"


def collect(repo_root: Path, *, pyodide_dir: Path | None = None, closure_dir: Path | None = None,
            third_party: tuple[str, ...] | None = None, project_dir: Path | None = None) -> dict[str, Path]:
    """Every archive name -> source file, checked to exist; raises UsageError naming what is missing.

    `third_party`: the import names the closure may use (default: the extension's in pyproject.toml).
    """
    surface = Path(project_dir) if project_dir is not None else surface_dir(repo_root)
    pyodide_dir = Path(pyodide_dir) if pyodide_dir is not None else default_pyodide_dir(repo_root, surface)
    closure_dir = Path(closure_dir) if closure_dir is not None else surface / "vendor"
    if third_party is None:
        third_party = load_config(Path(repo_root)).surface("extension").third_party
    entries: dict[str, Path] = {name: surface / name for name in PAGE_FILES}
    entries.update({f"{UI_DIR}/{rel}": path for rel, path in _files(surface / UI_DIR, None).items()})
    entries.update({f"pyodide/{name}": pyodide_dir / name for name in PYODIDE_FILES})
    missing = sorted(str(path) for path in entries.values() if not path.is_file())
    if any(not (pyodide_dir / name).is_file() for name in PYODIDE_FILES):
        missing.append(f"(Pyodide core missing: run `bash {surface / 'fetch_pyodide.sh'}`)")
    if not (closure_dir / "bonsai").is_dir():
        missing.append(f"{closure_dir / 'bonsai'} (the synced runtime: run `bonsai-sync sync --surface extension`)")
    else:
        missing.extend(
            f"{closure_dir / rel} (add {what} to [tool.bonsai-sync.surfaces.extension] and sync again)"
            for rel, what in CLOSURE_NEEDS.items() if not (closure_dir / rel).is_file()
        )
    if missing:
        raise UsageError("cannot build the extension, missing: " + "; ".join(missing))
    python = _files(closure_dir, PYTHON_SUFFIXES)
    python.update(_files(surface / "app", PYTHON_SUFFIXES))
    carried = pure_files(distributions_for(third_party, surface))
    clashes = sorted(set(carried) & set(python))
    if clashes:
        raise UsageError(f"third-party files would overwrite the closure's: {', '.join(clashes)}")
    python.update(carried)
    entries.update({f"python/{rel}": src for rel, src in python.items()})
    return entries


def _files(root: Path, suffixes: tuple[str, ...] | None) -> dict[str, Path]:
    """Files under `root` (with one of `suffixes`, or all), keyed by relative path; no caches."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and (suffixes is None or path.suffix in suffixes) and not _SKIP_DIRS.intersection(rel.parts):
            out[rel.as_posix()] = path
    return out


def build_extension(repo_root: Path, dist_dir: Path, *, pyodide_dir: Path | None = None,
                    closure_dir: Path | None = None, third_party: tuple[str, ...] | None = None,
                    project_dir: Path | None = None) -> Path:
    """Write `dist_dir/bonsai-extension.zip` reproducibly and return its path."""
    entries = collect(Path(repo_root), pyodide_dir=pyodide_dir, closure_dir=closure_dir, third_party=third_party,
                      project_dir=project_dir)
    listing = sorted(name.removeprefix("python/") for name in entries if name.startswith("python/"))
    dist_dir = Path(dist_dir)
    dist_dir.mkdir(parents=True, exist_ok=True)
    target = dist_dir / ZIP_NAME
    tmp = target.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted([*entries, "python/files.json"]):
            data = (json.dumps(listing, indent=1) + "\n").encode() if name == "python/files.json" \
                else entries[name].read_bytes()
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3  # unix, whatever the building OS
            zf.writestr(info, data)
    tmp.replace(target)
    return target
