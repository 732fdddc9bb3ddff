"""Module runtime_else."""
