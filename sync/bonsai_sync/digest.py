"""sha256 of every file in a tree: how sources are keyed and surfaces compared (content, not mtime)."""

from __future__ import annotations

import os
from hashlib import sha256

SKIP_DIRS = {"__pycache__"}


def digest_tree(top: str, skip_files: frozenset[str] = frozenset()) -> dict[str, str]:
    """`relative posix path -> sha256 hex` for every file below `top` (no __pycache__, no
    dot-directories, none of `skip_files` at the top level); {} when `top` does not exist."""
    found: dict[str, str] = {}
    stack = [(top, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir():
                if entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                    stack.append((entry.path, rel + "/"))
            elif not (prefix == "" and entry.name in skip_files):
                with open(entry.path, "rb") as handle:
                    found[rel] = sha256(handle.read()).hexdigest()
    return found
