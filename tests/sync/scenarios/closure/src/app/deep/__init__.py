"""Deep package."""
