"""Writing a new tree, swapping it in, and the lock that records what was written."""
