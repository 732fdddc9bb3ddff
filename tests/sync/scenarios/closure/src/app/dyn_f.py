"""Module dyn_f."""
