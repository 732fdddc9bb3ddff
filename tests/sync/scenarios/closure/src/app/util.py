"""Imported by the package __init__, so every surface that copies `app` copies it."""

import os

SEP = os.sep
