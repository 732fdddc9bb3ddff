"""Plugin c."""
