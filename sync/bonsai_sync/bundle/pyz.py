"""Write a zipapp bundle: a `#!/usr/bin/env python3` line, then a zip of `site-packages/`, a manifest and
the bootstrap (`pyz_boot.py`) as its `__main__.py`; same inputs, same bytes; executable."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

from .pyz_boot import MANIFEST, SITE

EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can hold: builds are byte-for-byte reproducible
STORED_FROM = 16 << 20  # files this large (model weights) are stored, not deflated: they barely shrink


def _entry(name: str, mode: int, size: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, EPOCH)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_STORED if size >= STORED_FROM else zipfile.ZIP_DEFLATED
    return info


def write_pyz(site: Path, target: Path, *, name: str, entry: str, python: str) -> Path:
    """`target`: a zipapp of `site` (a staged site-packages) running `entry` (MODULE:FUNCTION) on `python`
    ("3.11"); its manifest carries the content hash that names the unpack folder and every file's size.
    Each file is read once: hashed as it is written, the manifest written after the files."""
    files = sorted((p for p in site.rglob("*") if p.is_file()), key=lambda p: p.relative_to(site).as_posix())
    boot = Path(__file__).with_name("pyz_boot.py").read_bytes()
    content = hashlib.sha256()
    sizes: dict[str, int] = {}
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(out, "w") as zf:
            zf.writestr(_entry("__main__.py", 0o644, len(boot)), boot)
            for path in files:
                rel = SITE + path.relative_to(site).as_posix()
                mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
                size = path.stat().st_size
                digest = hashlib.sha256()
                with zf.open(_entry(rel, mode, size), "w") as dst, open(path, "rb") as src:
                    while chunk := src.read(1 << 20):
                        digest.update(chunk)
                        dst.write(chunk)
                content.update(f"{rel}\0{mode:o}\0{size}\0".encode())
                content.update(digest.digest())
                sizes[rel] = size
            content.update(hashlib.sha256(boot).digest())
            manifest = {"name": name, "entry": entry, "python": python, "content": content.hexdigest(), "sizes": sizes}
            text = json.dumps(manifest, indent=1, sort_keys=True).encode()
            zf.writestr(_entry(MANIFEST, 0o644, len(text)), text)
    os.chmod(tmp, 0o755)
    tmp.replace(target)
    return target
