"""Named in the fromlist."""
