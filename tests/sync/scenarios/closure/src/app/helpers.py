"""Module helpers."""
