"""Star submodule two."""
