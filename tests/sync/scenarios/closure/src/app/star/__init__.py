"""Star package: only the names in __all__ are submodules a star import pulls in."""

__all__ = ["one", "two"]
