"""Module lazy."""
