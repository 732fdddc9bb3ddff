"""The extension's own Python: the checks and model loading its page runs on the synced runtime."""
