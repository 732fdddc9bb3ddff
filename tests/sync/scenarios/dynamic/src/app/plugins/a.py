"""Plugin a."""
