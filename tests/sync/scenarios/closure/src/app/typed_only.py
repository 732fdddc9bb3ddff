"""Module typed_only."""
