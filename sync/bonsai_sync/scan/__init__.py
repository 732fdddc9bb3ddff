"""Scanning Python source into import/resource facts (libcst; pure: text in, facts out)."""

from ..facts import Facts
from .walker import scan

__all__ = ["scan", "scan_bytes"]


def scan_bytes(data: bytes, target: tuple[int, int]) -> Facts:
    """The facts of one source file's bytes for Python `target` (undecodable bytes are a Problem)."""
    from .decode import decode

    text, problem = decode(data)
    return scan(text, target) if problem is None else Facts(problems=(problem,))
