"""The app package. `app.unused` is named here only in a docstring."""

from . import util

NAME = "app.unused"
