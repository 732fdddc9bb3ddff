"""Checks, before any import of the GPU stack, that this Python can load the bundle's compiled modules."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from ._vendor.bonsai.errors import BonsaiError

# wgpu-py reaches the driver through cffi: its compiled backend is the first thing another Python cannot load
PROBE = "_cffi_backend"


def _built_for() -> str | None:
    """The CPython version tag of the probe's compiled file on sys.path (e.g. "311"), if one is there."""
    for entry in sys.path:
        folder = Path(entry or ".")
        try:
            found = sorted(folder.glob(f"{PROBE}.cpython-*.so"))
        except OSError:
            continue
        for path in found:
            tag = re.match(rf"{PROBE}\.cpython-(\d+)", path.name)
            if tag:
                return tag.group(1)
    return None


def check_interpreter() -> None:
    """Raise BonsaiError naming the Python a bundle was built for when this one cannot load its modules."""
    if importlib.util.find_spec(PROBE) is not None:
        return
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    tag = _built_for()
    if tag is None:
        raise BonsaiError(f"the GPU runtime needs cffi's compiled module '{PROBE}', which this Python {here} "
                          f"({sys.executable}) cannot find")
    want = f"{tag[0]}.{tag[1:]}"
    raise BonsaiError(f"this bundle was built for Python {want} and this is Python {here} ({sys.executable}): "
                      f"run it with python{want}")
