"""Top-level module names a Python source imports (absolute imports only), read with `ast`: the
tests' own oracle, independent of bonsai-sync's libcst walk."""

from __future__ import annotations

import ast


def imported_top_names(source: str) -> set[str]:
    """{"numpy", ...}: the first dotted part of every `import x.y` and `from x.y import z`, at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names
