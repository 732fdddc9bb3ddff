"""Leaf: a relative import three levels up."""

from ... import helpers
