"""The zipapp writer and its bootstrap on a small app: executable, reproducible, one unpack per content hash,
old builds' unpacks removed, damage repaired, an unwritable home survived, the wrong Python named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bonsai_sync.bundle.pyz import write_pyz

HERE = f"{sys.version_info.major}.{sys.version_info.minor}"


def site(tmp: Path, greeting: str = "hello") -> Path:
    root = tmp / "site"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "main.py").write_text(
        "import sys\nfrom pathlib import Path\n"
        f"def main():\n    print({greeting!r}, Path(__file__).parent.parent)\n    return 3\n")
    (root / "app" / "data.bin").write_bytes(bytes(range(256)) * 16)
    return root


def build(tmp: Path, greeting: str = "hello", python: str = HERE, name: str = "app-1.pyz") -> Path:
    out = tmp / "dist"
    out.mkdir(parents=True, exist_ok=True)
    return write_pyz(site(tmp / greeting, greeting), out / name, name="app", entry="app.main:main", python=python)


def run(pyz: Path, cache: Path | None, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    if cache is not None:
        env["BONSAI_BUNDLE_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-I", str(pyz), *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_the_file_is_executable_starts_with_a_shebang_and_runs_its_entry(tmp_path):
    pyz = build(tmp_path)
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env python3\n") and os.access(pyz, os.X_OK)
    done = subprocess.run([str(pyz)], env={"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin",
                                           "HOME": str(tmp_path), "BONSAI_BUNDLE_CACHE": str(tmp_path / "c")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and done.stdout.startswith("hello"), done.stderr


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    a = build(tmp_path / "a").read_bytes()
    b = build(tmp_path / "b").read_bytes()
    assert a == b


def test_a_renamed_copy_reuses_the_unpack_and_a_new_build_replaces_the_old_one(tmp_path):
    cache = tmp_path / "cache"
    first = build(tmp_path / "one")
    assert run(first, cache, tmp_path).returncode == 3
    renamed = first.with_name("renamed.pyz")
    first.rename(renamed)
    assert run(renamed, cache, tmp_path).returncode == 3
    assert len(list(cache.iterdir())) == 1  # one unpack for the same content, whatever the file is called
    (old,) = cache.iterdir()
    second = build(tmp_path / "two", greeting="bonjour")
    done = run(second, cache, tmp_path)
    assert done.returncode == 3 and done.stdout.startswith("bonjour")
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] != [old.name] and not old.exists()


def test_a_damaged_unpack_is_made_again(tmp_path):
    cache = tmp_path / "cache"
    pyz = build(tmp_path)
    assert run(pyz, cache, tmp_path).returncode == 3
    (unpack,) = cache.iterdir()
    data = unpack / "site-packages" / "app" / "data.bin"
    data.write_bytes(data.read_bytes()[:100])  # truncated
    done = run(pyz, cache, tmp_path)
    assert done.returncode == 3 and "damaged" in done.stderr and data.stat().st_size == 4096
    data.unlink()
    assert run(pyz, cache, tmp_path).returncode == 3 and data.stat().st_size == 4096


def test_an_unwritable_home_falls_back_to_the_temporary_folder(tmp_path):
    if os.geteuid() == 0:
        home = Path("/proc/self")  # not writable, even for root
    else:
        home = tmp_path / "ro"
        home.mkdir()
        home.chmod(0o500)
    done = run(build(tmp_path), None, home)
    assert done.returncode == 3 and "cannot be written; unpacking into" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_another_python_is_named_before_anything_is_unpacked(tmp_path):
    cache = tmp_path / "cache"
    done = run(build(tmp_path, python="2.7"), cache, tmp_path)
    assert done.returncode == 2 and f"built for Python 2.7 and this is Python {HERE}" in done.stderr
    assert not cache.exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="signals")
def test_ctrl_c_during_the_unpack_leaves_nothing_behind_and_no_traceback(tmp_path):
    import signal
    import time

    big = site(tmp_path / "big")
    (big / "app" / "weights.bin").write_bytes(os.urandom(64 << 20))
    pyz = write_pyz(big, tmp_path / "big.pyz", name="app", entry="app.main:main", python=HERE)
    cache = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-I", str(pyz)], env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                            "BONSAI_BUNDLE_CACHE": str(cache)}, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not any(cache.glob(".unpacking-*/site-packages/app")) and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 3:
        pytest.skip("the unpack finished before the signal arrived")
    assert proc.returncode == 130 and "interrupted while unpacking" in err and "Traceback" not in err
    assert not [p for p in cache.iterdir()]
