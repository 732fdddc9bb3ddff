"""`rewrite-imports`: the copy's absolute imports of its own top-level packages, rewritten to the
package that holds the dest (`import yaml` -> `from app._vendor import yaml`), as pypa/vendoring
does for pip. Pure: bytes in, bytes out; read from the syntax tree, so a comment or a string that
spells an import is never touched."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable

from .errors import FatalError


def tops_of(rels: Iterable[str]) -> frozenset[str]:
    """The top-level import names a set of module paths below the dest provide."""
    names = set()
    for rel in rels:
        head = rel.split("/")[0].split(".")[0]
        if head.isidentifier():
            names.add(head)
    return frozenset(names)


def rewrite_imports(data: bytes, tops: frozenset[str], namespace: str, shown: str = "") -> bytes:
    """`data` (a module's source) with every absolute import of a name in `tops` rewritten below
    `namespace`; the same bytes when there is none (or the file is no UTF-8 Python: left as it is,
    and the verifier reports what it imports)."""
    try:
        text = data.decode("utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return data
    edits: list[tuple[ast.Import | ast.ImportFrom, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in tops for a in node.names):
            edits.append((node, "; ".join(_import(a, tops, namespace) for a in node.names)))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in tops:
            edits.append((node, None))
    if not edits:
        return data
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)  # the line breaks ast counts, no others
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:  # ast columns count UTF-8 bytes
        return starts[line - 1] + len(lines[line - 1].encode("utf-8")[:col].decode("utf-8"))

    out = text
    for node, replacement in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        assert node.end_lineno is not None and node.end_col_offset is not None
        start, end = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
        if replacement is None:
            assert isinstance(node, ast.ImportFrom)
            match = re.match(r"from(\s+|\s*\\\n\s*)([\w.\s\\]+?)(\s+|\s*\\\n\s*)import\b", out[start:end])
            if match is None or re.sub(r"[\s\\]", "", match.group(2)) != node.module:
                raise FatalError(f"{shown}:{node.lineno}:{node.col_offset + 1}: cannot rewrite this import "
                                 "(rewrite-imports); spell it `from package.module import name`")
            start, end = start + match.start(2), start + match.end(2)
            replacement = f"{namespace}.{node.module}"
        out = out[:start] + replacement + out[end:]
    return out.encode("utf-8")


def _import(alias: ast.alias, tops: frozenset[str], namespace: str) -> str:
    """One name of an `import` statement, rewritten when it is vendored."""
    name, top = alias.name, alias.name.split(".")[0]
    if top not in tops:
        return f"import {name}" + (f" as {alias.asname}" if alias.asname else "")
    if alias.asname:
        parent, _, last = f"{namespace}.{name}".rpartition(".")
        return f"from {parent} import {last} as {alias.asname}"
    if "." not in name:
        return f"from {namespace} import {name}"
    # `import yaml.x` loads yaml.x and binds `yaml`: load the copy's submodule, then bind its package
    hidden = "_vendored_" + name.replace(".", "_")
    return f"import {namespace}.{name} as {hidden}; from {namespace} import {top}"
