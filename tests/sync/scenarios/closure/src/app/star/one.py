"""Star submodule one."""
