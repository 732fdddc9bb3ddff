"""Module dyn_a."""
