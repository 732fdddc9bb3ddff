"""Target of __import__ with a fromlist."""
