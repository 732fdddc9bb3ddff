"""In a namespace package: no __init__.py is invented."""
