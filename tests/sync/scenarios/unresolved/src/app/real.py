"""Real."""
