"""build_extension: a reproducible zip holding the page, Pyodide, the closure and the page's Python."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from bonsai_sync.bundle.extension import build_extension
from bonsai_sync.errors import BuildError, UsageError
from tests.source_imports import imported_top_names

from .conftest import REPO, _closure_dir


def test_the_zip_is_reproducible_and_sorted(pyodide_dir: Path, tmp_path: Path):
    closure = _closure_dir(tmp_path)
    first = build_extension(REPO, tmp_path / "one", closure_dir=closure)
    again = build_extension(REPO, tmp_path / "two", closure_dir=closure)
    assert hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(first.read_bytes()).digest()
    with zipfile.ZipFile(again) as zf:
        names = zf.namelist()
        assert names == sorted(names)
        assert {info.date_time for info in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        listing = json.loads(zf.read("python/files.json"))
    assert listing == sorted(n.removeprefix("python/") for n in names if n.startswith("python/") and
                             n != "python/files.json")
    for required in ("manifest.json", "page.html", "page.js", "pyodide/pyodide.asm.wasm",
                     "python/bonsai/gpu/browser.py", "python/bonsai_extension/page.py"):
        assert required in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".map")]


def test_missing_pyodide_names_the_fetch_script(tmp_path: Path):
    with pytest.raises(UsageError, match="fetch_pyodide.sh"):
        build_extension(REPO, tmp_path / "dist", pyodide_dir=tmp_path / "nowhere", closure_dir=tmp_path)


def test_closure_has_no_numpy_or_wgpu(extension_zip: Path):
    """Every Python file the page can import, at any nesting, imports neither numpy nor wgpu."""
    with zipfile.ZipFile(extension_zip) as zf:
        names = zf.namelist()
        offenders = {
            name: sorted(found)
            for name in names if name.startswith("python/") and name.endswith(".py")
            if (found := imported_top_names(zf.read(name).decode()) & {"numpy", "wgpu"})
        }
    assert offenders == {}
    assert {"python/bonsai/gpu/browser.py", "python/bonsai/engine/engine.py", "python/bonsai/kv/cache.py",
            "python/bonsai/kv/attention/serial.wgsl", "python/bonsai/ops/matmul.wgsl"} <= set(names)


def test_a_closure_without_what_the_page_needs_is_refused_by_name(pyodide_dir: Path, tmp_path: Path):
    closure = tmp_path / "vendor"
    (closure / "bonsai").mkdir(parents=True)
    (closure / "bonsai" / "__init__.py").write_text("")
    with pytest.raises(UsageError, match=r"bonsai/gpu/browser\.py \(add bonsai\.gpu\.browser to \[tool"):
        build_extension(REPO, tmp_path / "dist", closure_dir=closure)


def test_the_chat_templates_jinja2_travels_pure_python(extension_zip: Path):
    """jinja2 (declared third-party) and MarkupSafe (its requirement) ship without compiled speedups."""
    with zipfile.ZipFile(extension_zip) as zf:
        names = set(zf.namelist())
    assert {"python/jinja2/__init__.py", "python/markupsafe/__init__.py", "python/markupsafe/_native.py"} <= names
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c")) or n.endswith("/RECORD")]
    assert any(n.startswith("python/jinja2-") and n.endswith("/METADATA") for n in names)


def test_a_third_party_file_that_would_overwrite_the_closure_is_refused(pyodide_dir: Path, tmp_path: Path):
    closure = tmp_path / "vendor"
    shutil.copytree(_closure_dir(tmp_path), closure)
    (closure / "jinja2").mkdir()
    (closure / "jinja2" / "__init__.py").write_text("")
    with pytest.raises(UsageError, match=r"third-party files would overwrite the closure's: jinja2/__init__\.py"):
        build_extension(REPO, tmp_path / "dist", closure_dir=closure)


def test_an_undeclarable_third_party_name_is_refused_by_name(pyodide_dir: Path, tmp_path: Path):
    with pytest.raises(BuildError, match="no_such_package_xyz, which no installed distribution provides"):
        build_extension(REPO, tmp_path / "dist", closure_dir=_closure_dir(tmp_path),
                        third_party=("js", "no_such_package_xyz"))
