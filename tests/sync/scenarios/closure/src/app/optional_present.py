"""Module optional_present."""
