"""Fixtures: the extension bundle built and unpacked, one headless Chromium with it, a model server."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import warnings
import zipfile
from pathlib import Path

import pytest

from .cdp import Chromium, find_chromium

REPO = Path(__file__).resolve().parents[3]


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _missing(why: str) -> None:
    if _in_ci():
        pytest.fail(f"CI=true but {why}")
    pytest.skip(why)


# What the page imports from the runtime; proposed for [tool.bonsai-sync.surfaces.extension] in
# pyproject.toml. Until the repo's own table names bonsai.gpu.browser, the fixture syncs with this.
EXTENSION_SURFACE = {
    "dest": "surfaces/extension/vendor",
    "entry": ["bonsai.gpu.browser", "bonsai.gguf", "bonsai.errors", "bonsai.tokenizer", "bonsai.config"],
    "third-party": ["js", "pyodide"],
    "data": ["bonsai/kv/*.wgsl"],
}


def _sync_closure(tmp: Path) -> tuple[Path | None, str]:
    """Run the real bonsai-sync for the extension in a scratch root (repo config + EXTENSION_SURFACE)."""
    import tomllib

    import tomli_w

    root = tmp / "sync-root"
    root.mkdir()
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    config["tool"]["bonsai-sync"]["surfaces"] = {"extension": EXTENSION_SURFACE}
    (root / "pyproject.toml").write_text(tomli_w.dumps(config))
    for src in config["tool"]["bonsai-sync"]["source"]:  # copied: bonsai-sync resolves symlinks out of root
        shutil.copytree(REPO / src, root / src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run([sys.executable, "-m", "bonsai_sync", "--root", str(root), "--no-cache", "sync",
                           "--surface", "extension"], capture_output=True, text=True, timeout=120)
    if done.returncode:
        return None, done.stdout + done.stderr
    return root / EXTENSION_SURFACE["dest"], ""


def _closure_dir(tmp: Path) -> Path:
    """The synced closure the bundle ships, as bonsai-sync writes it (the repo's, else a scratch sync)."""
    vendor = REPO / "surfaces" / "extension" / "vendor"
    if (vendor / "bonsai" / "gpu" / "browser.py").is_file():
        return vendor
    synced, why = _sync_closure(tmp)
    if synced is not None:
        return synced
    # bonsai-sync refuses the closure (see `why`); ship the runtime's sources so the page's own
    # checks still run, and let test_closure_has_no_numpy_or_wgpu report the refusal.
    warnings.warn(f"bonsai-sync refused the extension closure; bundling runtime/bonsai as is:\n{why}", stacklevel=2)
    dest = tmp / "closure"
    shutil.copytree(REPO / "runtime" / "bonsai", dest / "bonsai",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (dest / "SYNC_REFUSED.txt").write_text(why)
    return dest


@pytest.fixture(scope="session")
def pyodide_dir() -> Path:
    """The Pyodide core the bundle ships (fails in CI, skips elsewhere, when it is not fetched)."""
    from bonsai_sync.build_extension import default_pyodide_dir

    path = default_pyodide_dir(REPO)
    if not (path / "pyodide.asm.wasm").is_file():
        _missing("Pyodide is not fetched: run `bash surfaces/extension/fetch_pyodide.sh`")
    return path


@pytest.fixture(scope="session")
def extension_zip(pyodide_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bonsai_sync.build_extension import build_extension

    tmp = tmp_path_factory.mktemp("extension-build")
    return build_extension(REPO, tmp / "dist", closure_dir=_closure_dir(tmp))


@pytest.fixture(scope="session")
def extension_dir(extension_zip: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle unpacked exactly as a user would load it (chrome://extensions, Load unpacked)."""
    out = tmp_path_factory.mktemp("extension")
    with zipfile.ZipFile(extension_zip) as zf:
        zf.extractall(out)
    return out


@pytest.fixture(scope="session")
def chromium_binary() -> str:
    binary = os.environ.get("BONSAI_CHROMIUM") or find_chromium()
    if binary is None:
        _missing("no Chromium found: apt-get install chromium (or set BONSAI_CHROMIUM)")
    return binary


@pytest.fixture(scope="session")
def browser(chromium_binary: str, extension_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    chromium = Chromium(chromium_binary, extension_dir, tmp_path_factory.mktemp("chromium") / "profile")
    yield chromium
    chromium.close()


class _CorsHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files to the extension page (another origin), quietly."""

    def end_headers(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        super().end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory):
    """(directory, base URL): files put in the directory are served on http://127.0.0.1:PORT/."""
    root = tmp_path_factory.mktemp("models")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_CorsHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
