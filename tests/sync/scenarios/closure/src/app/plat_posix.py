"""Module plat_posix."""
