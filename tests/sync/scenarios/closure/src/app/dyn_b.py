"""Module dyn_b."""
