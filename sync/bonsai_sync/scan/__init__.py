"""Scanning Python source into import/resource facts (pure: text in, facts out): CPython's `ast` where it
reads a file exactly as libcst does (no dynamic-import or resource hint), libcst for the rest."""

from .facts import Facts
from .walker import TARGET
from .walker import scan as scan_libcst

__all__ = ["scan", "scan_bytes", "scan_libcst"]


def scan(text: str, target: tuple[int, int] = TARGET) -> Facts:
    """The facts of one module's source text for Python `target` (libcst's, however they are read)."""
    from .astscan import scan_ast

    facts = scan_ast(text, target)
    return facts if facts is not None else scan_libcst(text, target)


def scan_bytes(data: bytes, target: tuple[int, int]) -> Facts:
    """The facts of one source file's bytes for Python `target` (undecodable bytes are a Problem)."""
    from .decode import decode

    text, problem = decode(data)
    return scan(text, target) if problem is None else Facts(problems=(problem,))
