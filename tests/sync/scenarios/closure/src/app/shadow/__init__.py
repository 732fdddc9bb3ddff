"""The package directory wins over shadow.py."""

WHICH = "package"
