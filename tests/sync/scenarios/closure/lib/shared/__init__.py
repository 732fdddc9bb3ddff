"""A first-party package in a second source root."""
