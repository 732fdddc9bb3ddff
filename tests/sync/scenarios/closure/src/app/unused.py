"""Module unused."""
