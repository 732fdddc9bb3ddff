"""A plan against the dest on disk (what to write, remove or refuse, and whose files are whose), and where each file's scan facts come from."""
