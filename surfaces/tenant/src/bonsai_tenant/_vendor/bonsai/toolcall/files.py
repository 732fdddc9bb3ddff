"""The `read_file` tool: read-only lookup of files under one configured directory, nothing outside."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from .errors import ToolExecutionError
from .registry import Tool, tool

MAX_BYTES = 64 * 1024


def resolve_inside(root: Path, relative: str) -> Path:
    """`root/relative` resolved (symlinks followed); ToolExecutionError if it is or leads outside root."""
    base = root.resolve()
    pure = PurePosixPath(relative.replace("\\", "/"))
    if not relative or pure.is_absolute() or Path(relative).is_absolute() or ".." in pure.parts:
        raise ToolExecutionError(
            f"refused {relative!r}: give a relative path inside the directory, without '..'"
        )
    target = (base / pure).resolve()
    if target != base and base not in target.parents:
        raise ToolExecutionError(f"refused {relative!r}: it leads outside the directory (symlink)")
    return target


def make_file_lookup(root: str | Path) -> Tool:
    """A `read_file` tool confined to `root`: files are read (UTF-8, first 64 KiB), directories listed."""
    root = Path(root)

    def read_file(path: str) -> str:
        """Read a text file, or list a directory, inside the configured directory.

        Args:
            path: Relative path inside the directory, e.g. "notes/todo.txt"; "." lists the top.
        """
        target = resolve_inside(root, path)
        if target.is_dir():
            names = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())
            return "\n".join(names) or "(empty directory)"
        if not target.is_file():
            raise ToolExecutionError(f"no such file {path!r}")
        with target.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
        text = data[:MAX_BYTES].decode("utf-8", errors="replace")
        return text + ("\n[truncated at 64 KiB]" if len(data) > MAX_BYTES else "")

    return tool(read_file)
