"""More."""
