"""Dynamic imports the scanner cannot read."""

import importlib
import pkgutil

import app.plugins


def load(name):
    importlib.import_module(name)
    importlib.import_module(f"app.plugins.{name}")
    exec("import app.plugins.a")
    for info in pkgutil.iter_modules(app.plugins.__path__):
        __import__(info.name)
