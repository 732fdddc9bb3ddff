"""Module deep/sibling."""
