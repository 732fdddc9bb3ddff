"""Imports a sibling module; a plan that drops it must be caught by the verifier."""

from . import helper

VALUE = helper.VALUE
