"""Not imported."""
