"""Fixtures: the extension bundle built and unpacked, one headless Chromium with it, a model server."""

from __future__ import annotations

import functools
import http.server
import os
import threading
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


def _closure_dir(tmp: Path) -> Path:
    """The synced closure the bundle ships: the repo's own `bonsai-sync sync` output (CI checks it is fresh)."""
    vendor = REPO / "surfaces" / "extension" / "vendor"
    if not (vendor / "bonsai" / "engine" / "engine.py").is_file():
        pytest.fail("surfaces/extension/vendor holds no synced runtime: run `bonsai-sync sync`")
    return vendor


@pytest.fixture(scope="session")
def pyodide_dir() -> Path:
    """The Pyodide core the bundle ships (fails in CI, skips elsewhere, when it is not fetched)."""
    from bonsai_sync.bundle.extension import default_pyodide_dir

    path = default_pyodide_dir(REPO)
    if not (path / "pyodide.asm.wasm").is_file():
        _missing("Pyodide is not fetched: run `bash surfaces/extension/fetch_pyodide.sh`")
    return path


@pytest.fixture(scope="session")
def extension_zip(pyodide_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bonsai_sync.bundle.extension import build_extension

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


SERVED: list[str] = []  # every path the model server was asked for, in order


class _CorsHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files to the extension page (another origin), quietly, noting each path asked for."""

    def do_GET(self) -> None:
        SERVED.append(self.path)
        super().do_GET()

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


def serve_default_model(model_server: tuple[Path, str]) -> str:
    """The URL the model server gives the default model (linked into its directory once)."""
    from bonsai.models import default_model_path

    root, base = model_server
    model = Path(default_model_path())
    if not (root / model.name).exists():
        (root / model.name).symlink_to(model)
    return f"{base}/{model.name}"
