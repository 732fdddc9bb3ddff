"""Plugin b."""
