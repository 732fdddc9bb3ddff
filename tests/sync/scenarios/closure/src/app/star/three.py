"""Star submodule three."""
