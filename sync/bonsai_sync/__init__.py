"""bonsai-sync: copy exactly the import closure of the runtime into each surface, and prove it."""

__version__ = "0.1.0"
