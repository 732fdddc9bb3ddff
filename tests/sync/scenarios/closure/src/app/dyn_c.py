"""Module dyn_c."""
