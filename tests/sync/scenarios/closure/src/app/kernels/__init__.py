"""Kernel resources."""
