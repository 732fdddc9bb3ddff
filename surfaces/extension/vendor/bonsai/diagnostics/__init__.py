"""Checks and measurements run from the CLI and tests: attention exactness, KV cache quality."""
