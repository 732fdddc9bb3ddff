"""Entry: every import form the closure must follow."""

from __future__ import annotations

import importlib
import os
import sys
from importlib import import_module as im
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import click
import shared.tools

import app.deep.inner.leaf

from . import NAME, helpers
from .star import *  # noqa: F403
from .shadow import WHICH
import app.ns.part

if TYPE_CHECKING:
    from . import typed_only
else:
    from . import runtime_else

try:
    from . import optional_present
    import not_installed_anywhere
except ImportError:
    optional_present = None

if sys.platform == "win32":
    from . import plat_win
else:
    from . import plat_posix

il = importlib
DOC = "import app.unused"


def later():
    from . import lazy

    return lazy


def dynamic():
    importlib.import_module("app.dyn_a")
    im(".dyn_b", __package__)
    importlib.import_module(".dyn_c", package="app")
    __import__("app.dyn_d", fromlist=["e"])
    il.import_module("app.dyn_f")


def resource_paths():
    yield resources.files("app.kernels") / "add.wgsl"
    yield resources.files("app.kernels").joinpath("sub", "mul.wgsl")
    yield Path(__file__).parent / "templates" / "page.html"
    yield Path(__file__).with_name("config.json")
    yield os.path.join(os.path.dirname(__file__), "notes.txt")
    yield Path(__file__).parent / "assets"
