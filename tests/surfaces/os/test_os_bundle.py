"""The OS bundle as its users run it: one file, copied alone, run by a fresh interpreter; reproducible."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from surface_repo import config

from bonsai_sync.bundle import BuildError, StaleSurfaceError, build_surface, check_app_imports


def run_bundle(bundle: Path, python: Path, workdir: Path, *args: str, timeout: float = 120):
    """Copy `bundle` alone into `workdir` and run it there with `python -I` and a minimal environment."""
    workdir.mkdir(parents=True, exist_ok=True)
    copy = workdir / bundle.name
    shutil.copyfile(bundle, copy)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "BONSAI_BUNDLE_CACHE": str(workdir / "cache"),
           "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    return subprocess.run([str(python), "-I", copy.name, *args], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_bundle_is_one_file_named_for_its_python_and_platform(os_bundle):
    assert os_bundle.is_file() and os_bundle.suffix == ".pyz"
    assert os_bundle.name.startswith("bonsai-os-0.1.0-cp3") and "linux" in os_bundle.name
    assert os_bundle.read_bytes()[:23] == b"#!/usr/bin/env python3\n" and os.access(os_bundle, os.X_OK)


def test_the_bundle_alone_starts_with_a_fresh_interpreter(os_bundle, bare_python, tmp_path):
    done = run_bundle(os_bundle, bare_python, tmp_path, "--version")
    assert (done.returncode, done.stdout.strip()) == (0, "bonsai-os 0.1.0"), done.stderr
    done = run_bundle(os_bundle, bare_python, tmp_path, "--help")
    assert done.returncode == 0 and "Exit codes" in " ".join(done.stdout.split())


def test_the_bundle_carries_the_runtime_its_compiled_deps_and_the_default_model(os_bundle, bare_python, tmp_path):
    assert run_bundle(os_bundle, bare_python, tmp_path, "--version").returncode == 0  # unpacks into BONSAI_BUNDLE_CACHE
    (site,) = (tmp_path / "cache").glob("*/site-packages")
    probe = (f"import sys; sys.path.insert(0, {str(site)!r})\n"
             "import bonsai_os, numpy, wgpu, jinja2\n"
             "import bonsai_os._vendor.bonsai as bonsai, bonsai_os._vendor.bonsai.engine, bonsai_os._vendor.bonsai.tokenizer.chat_template\n"
             "from bonsai_os.cli import default_model\n"
             "print(bonsai.__file__, numpy.__file__, wgpu.__file__, default_model())")
    done = subprocess.run([str(bare_python), "-I", "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    paths = done.stdout.split()
    assert all(p.startswith(str(site)) for p in paths), paths
    assert paths[-1].endswith("bonsai_os/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    notice = (site / "bonsai_os" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf.LICENSE.txt").read_text()
    assert "licence: Apache-2.0" in notice and "sha256 b179c952" in notice
    assert not [p.name for p in site.iterdir() if p.name.startswith(("llm", "llama_cpp"))]
    assert not (site / "bonsai").exists()  # the runtime only inside bonsai_os: no overlap with `bonsai`


def test_building_twice_gives_identical_bytes(os_repo, os_bundle, tmp_path):
    again = build_surface(config(os_repo), "os", tmp_path)
    assert again.name == os_bundle.name
    assert again.read_bytes() == os_bundle.read_bytes()


def test_a_hand_edited_synced_file_stops_check_and_build_naming_it(os_repo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(os_repo, repo)
    edited = repo / "surfaces" / "os" / "src" / "bonsai_os" / "_vendor" / "bonsai" / "errors.py"
    edited.write_text(edited.read_text() + "# patched by hand\n")
    with pytest.raises(StaleSurfaceError) as info:
        build_surface(config(repo), "os", tmp_path / "dist")
    assert "surfaces/os/src/bonsai_os/_vendor/bonsai/errors.py: edited by hand" in str(info.value)
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())
    check = subprocess.run([sys.executable, "-m", "bonsai_sync", "--root", str(repo), "--no-cache", "check",
                            "--surface", "os"], capture_output=True, text=True)
    assert check.returncode == 1 and "surfaces/os/src/bonsai_os/_vendor/bonsai/errors.py" in check.stdout + check.stderr


def test_an_app_import_missing_from_the_copy_stops_the_build_with_file_and_line(os_repo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(os_repo, repo)
    src = repo / "surfaces" / "os" / "src"
    vendor = src / "bonsai_os" / "_vendor"
    check_app_imports(repo, src, vendor, "os")  # complete copy: fine
    shutil.rmtree(vendor / "bonsai" / "engine")
    with pytest.raises(BuildError) as info:
        check_app_imports(repo, src, vendor, "os")
    assert "surfaces/os/src/bonsai_os/model.py:" in str(info.value)
    assert "imports bonsai_os._vendor.bonsai.engine, which the synced copy lacks; add bonsai.engine" in str(info.value)


def test_an_app_import_of_the_top_level_runtime_stops_the_build(os_repo, tmp_path):
    """`from bonsai.x import y` in the app would load the `bonsai` distribution, not the bundle's copy."""
    repo = tmp_path / "repo"
    shutil.copytree(os_repo, repo)
    src = repo / "surfaces" / "os" / "src"
    session = src / "bonsai_os" / "session.py"
    session.write_text(session.read_text().replace("from ._vendor.bonsai.errors", "from bonsai.errors"))
    with pytest.raises(BuildError) as info:
        check_app_imports(repo, src, src / "bonsai_os" / "_vendor", "os")
    assert str(info.value).startswith("surfaces/os/src/bonsai_os/session.py:17: imports bonsai.errors, the runtime "
                                      "distribution, not the surface's copy")


def test_a_copy_outside_the_apps_package_stops_the_build(os_repo, tmp_path):
    """The old layout (surfaces/os/vendor, a top-level `bonsai` in the bundle) is refused, naming the dest."""
    repo = tmp_path / "repo"
    shutil.copytree(os_repo, repo)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("surfaces/os/src/bonsai_os/_vendor", "surfaces/os/vendor"))
    from surface_repo import sync

    sync(repo)
    with pytest.raises(BuildError, match="the synced copy must live inside the app's package"):
        build_surface(config(repo), "os", tmp_path / "dist")


def test_a_surface_without_a_bundle_is_a_usage_error(os_repo):
    from dataclasses import replace

    from bonsai_sync.errors import UsageError

    real = config(os_repo)
    unbundled = replace(real, surfaces=tuple(replace(s, bundle="") for s in real.surfaces))
    with pytest.raises(UsageError, match="surface 'os' declares no bundle kind; add `bundle = \"zipapp\"`"):
        build_surface(unbundled, "os", "/nonexistent")


@pytest.mark.slow
def test_the_bundle_answers_a_prompt_with_the_default_model(os_bundle, bare_python, tmp_path):
    done = run_bundle(os_bundle, bare_python, tmp_path, "--tools", "", "--max-tokens", "8",
                      "What is the capital of France?", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Paris" in done.stdout
