"""Deeper."""
