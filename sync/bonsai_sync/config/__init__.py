"""Reading a repository's `[tool.bonsai-sync]` and the distributions in its source roots."""
