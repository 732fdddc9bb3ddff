"""Module plat_win."""
