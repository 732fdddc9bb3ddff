"""Scanning Python source into import/resource facts (libcst; pure: text in, facts out)."""

from .walker import scan

__all__ = ["scan"]
