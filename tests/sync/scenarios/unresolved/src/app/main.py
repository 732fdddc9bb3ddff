"""Imports that cannot resolve."""

import app.nope
from . import real
from ... import beyond
import requests


def later():
    import yaml
